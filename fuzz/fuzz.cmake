# The fuzz build's settings, for `cmake -C fuzz/fuzz.cmake` (scripts/fuzz.sh): clang with libFuzzer's
# coverage, AddressSanitizer and UndefinedBehaviorSanitizer on every library, CUDA and the tests off.
# Only the fuzz targets and what they link are built (target gradsync_fuzzers).
set(CMAKE_C_COMPILER clang CACHE STRING "")
set(CMAKE_CXX_COMPILER clang++ CACHE STRING "")
set(CMAKE_BUILD_TYPE Release CACHE STRING "")
# -O1 and line tables only: quick to compile, and stack traces still name the lines.
set(CMAKE_C_FLAGS_RELEASE "-O1 -gline-tables-only" CACHE STRING "")
set(CMAKE_CXX_FLAGS_RELEASE "-O1 -gline-tables-only" CACHE STRING "")
# `-DGRADSYNC_FUZZ_SANITIZERS=undefined` (given before -C) makes the build of the targets that
# AddressSanitizer cannot run (fuzz_sentencepiece: the plugin's RTLD_DEEPBIND).
set(GRADSYNC_FUZZ_SANITIZERS "address,undefined" CACHE STRING "")
set(GRADSYNC_SANITIZE "-fsanitize=fuzzer-no-link,${GRADSYNC_FUZZ_SANITIZERS} -fno-sanitize-recover=undefined -fno-omit-frame-pointer")
set(CMAKE_C_FLAGS "${GRADSYNC_SANITIZE}" CACHE STRING "")
set(CMAKE_CXX_FLAGS "${GRADSYNC_SANITIZE}" CACHE STRING "")
set(CMAKE_EXE_LINKER_FLAGS "-fsanitize=${GRADSYNC_FUZZ_SANITIZERS}" CACHE STRING "")
set(GRADSYNC_CUDA OFF CACHE STRING "")
set(GRADSYNC_BUILD_TESTS OFF CACHE BOOL "")
set(GRADSYNC_FUZZ ON CACHE BOOL "")

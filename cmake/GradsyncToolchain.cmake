# How GCC builds gradsync: how much debug information RelWithDebInfo keeps, and which linker
# links. Both choices are made here only.
#
# GRADSYNC_DEBUG_INFO=lines (the default): -g1, line tables. Backtraces, sanitizer reports and
# profilers still name every function, file and line; a debugger shows no local variables.
# Full information (-g) makes each object file about five times larger and the build about a
# fifth slower (measured on tests/integration/sharding_test.cc: 10.4 s and 2.9 MB with -g, 8.7 s
# and 0.5 MB with -g1). GRADSYNC_DEBUG_INFO=full brings -g back.
set(GRADSYNC_DEBUG_INFO "lines" CACHE STRING "RelWithDebInfo's debug information: lines (-g1) or full (-g)")
set_property(CACHE GRADSYNC_DEBUG_INFO PROPERTY STRINGS lines full)
if(NOT GRADSYNC_DEBUG_INFO MATCHES "^(lines|full)$")
  message(FATAL_ERROR "gradsync: GRADSYNC_DEBUG_INFO must be lines or full, not \"${GRADSYNC_DEBUG_INFO}\"")
endif()
if(GRADSYNC_DEBUG_INFO STREQUAL "lines" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # After CMAKE_<LANG>_FLAGS_RELWITHDEBINFO's -g on the command line, so this level wins.
  add_compile_options("$<$<AND:$<CONFIG:RelWithDebInfo>,$<COMPILE_LANGUAGE:C,CXX>>:-g1>")
endif()

# GNU gold links where the toolchain has it (binutils does on Debian 12): about three times
# faster than the default BFD linker on the test binaries (worker_test: 5.9 s against 1.8 s), and
# a build links some seventy of them.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=gold" GRADSYNC_HAVE_GOLD)
  if(GRADSYNC_HAVE_GOLD)
    add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fuse-ld=gold>")
  endif()
endif()

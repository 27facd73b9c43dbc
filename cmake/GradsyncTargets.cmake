# Helpers that keep every target's compile settings and test registration in one place.

set(GRADSYNC_WARNINGS -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)

# gradsync_library(NAME SOURCES ... DEPS ...)
# A library under libs/<dir>: public headers live in <dir>/include.
function(gradsync_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${GRADSYNC_WARNINGS}>)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
endfunction()

# gradsync_binary(NAME SOURCES ... DEPS ...)
function(gradsync_binary name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${GRADSYNC_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endfunction()

# Registers the cases of test binary `name` that GoogleTest `filter` matches (all when empty) with
# CTest, each with `labels`. gtest_discover_tests writes its PROPERTIES out unquoted, which keeps
# only the first of several labels, so the labels are set by a script CTest runs after the
# discovered list: every label of the list reaches `ctest -L`.
function(gradsync_discover_tests name filter timeout labels)
  cmake_parse_arguments(ARG "" "PREFIX" "" ${ARGN})
  get_property(count TARGET ${name} PROPERTY GRADSYNC_DISCOVERIES)
  math(EXPR count "${count} + 1")
  set_property(TARGET ${name} PROPERTY GRADSYNC_DISCOVERIES ${count})
  set(cases "${name}_cases_${count}")
  if(filter)
    set(filter_args TEST_FILTER "${filter}")
  endif()
  if(ARG_PREFIX)
    set(prefix_args TEST_PREFIX "${ARG_PREFIX}")
  endif()
  gtest_discover_tests(${name}
    ${filter_args}
    ${prefix_args}
    TEST_LIST ${cases}
    DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${timeout})
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${cases}_labels.cmake")
  file(WRITE "${script}"
    "if(${cases})\n  set_tests_properties(\${${cases}} PROPERTIES LABELS \"${labels}\")\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()

# gradsync_test(NAME SOURCES ... DEPS ... [LABELS ...] [TIMEOUT seconds] [NUMERICS ALL|filter])
# One GoogleTest binary registered with CTest; every TEST in it becomes a CTest case.
# NUMERICS marks the cases whose results depend on how BLAS rounds (all of them, or those a
# GoogleTest filter matches) with the label `numerics`, which scripts/numerics-check.sh reruns
# under every OpenBLAS kernel the CPU can execute.
function(gradsync_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;NUMERICS" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${GRADSYNC_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(ARG_NUMERICS STREQUAL "ALL")
    gradsync_discover_tests(${name} "" ${ARG_TIMEOUT} "${ARG_LABELS};numerics")
  elseif(ARG_NUMERICS)
    gradsync_discover_tests(${name} "${ARG_NUMERICS}" ${ARG_TIMEOUT} "${ARG_LABELS};numerics")
    gradsync_discover_tests(${name} "-${ARG_NUMERICS}" ${ARG_TIMEOUT} "${ARG_LABELS}")
  else()
    gradsync_discover_tests(${name} "" ${ARG_TIMEOUT} "${ARG_LABELS}")
  endif()
endfunction()

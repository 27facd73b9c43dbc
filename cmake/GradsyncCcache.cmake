# Compiles C, C++ and CUDA through ccache when it is installed, with its cache where ccache keeps
# it by default (~/.cache/ccache), outside every checkout. Two checkouts of one commit then
# compile each source once between them: a developer's `make build` leaves the objects that CI's
# clean clone, and the fresh-machine chroot inside it (which binds the same cache in), find again.
#
# GRADSYNC_CCACHE: AUTO (the default) uses ccache when found, ON requires it, OFF never uses it.
# A launcher given by the caller (CMAKE_<LANG>_COMPILER_LAUNCHER, on the command line or in the
# environment) is kept as it is.
#
# What makes two checkouts hit the same entries:
#   CCACHE_BASEDIR=<source dir>  ccache rewrites the absolute paths under the checkout into paths
#                                relative to the build directory before hashing (CMake passes
#                                every source and include directory absolute). The compiler then
#                                sees those relative paths: __FILE__ is relative (the log prints
#                                its base name only), and CMake turns the relative paths of the
#                                compiler's dependency files back into absolute ones (3.20+).
#   CCACHE_NOHASHDIR=true        the working directory stays out of the hash, although -g1 writes
#                                it into the objects' line tables: a debugger finds sources
#                                relative to the build directory.
#   CCACHE_COMPILERCHECK=content the compiler is known by its contents, not its time stamp (the
#                                chroot's g++ and the host's are two installs of one package).
set(GRADSYNC_CCACHE "AUTO" CACHE STRING "Compile through ccache: AUTO, ON or OFF")
set_property(CACHE GRADSYNC_CCACHE PROPERTY STRINGS AUTO ON OFF)

if(NOT GRADSYNC_CCACHE STREQUAL "OFF")
  find_program(GRADSYNC_CCACHE_PROGRAM ccache)
  find_program(GRADSYNC_ENV_PROGRAM env)
  if(GRADSYNC_CCACHE_PROGRAM AND GRADSYNC_ENV_PROGRAM)
    set(launcher ${GRADSYNC_ENV_PROGRAM} CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=true
        CCACHE_COMPILERCHECK=content ${GRADSYNC_CCACHE_PROGRAM})
    set(through)
    foreach(lang C CXX CUDA)
      if(NOT CMAKE_${lang}_COMPILER_LAUNCHER AND NOT DEFINED ENV{CMAKE_${lang}_COMPILER_LAUNCHER})
        set(CMAKE_${lang}_COMPILER_LAUNCHER ${launcher})
        list(APPEND through ${lang})
      endif()
    endforeach()
    if(through)
      list(JOIN through ", " through)
      message(STATUS "gradsync: compiling ${through} through ${GRADSYNC_CCACHE_PROGRAM}")
    endif()
  elseif(GRADSYNC_CCACHE STREQUAL "ON")
    message(FATAL_ERROR "gradsync: GRADSYNC_CCACHE=ON but ccache was not found")
  endif()
endif()

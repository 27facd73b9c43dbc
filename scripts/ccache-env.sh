#!/usr/bin/env bash
# Prints, one KEY=VALUE a line, the environment under which CMake compiles C and C++ through
# ccache with its cache in DIR. CI's two builds of one checkout use it (.ci/run): the CPU build
# inside the fresh-machine chroot (scripts/fresh-machine-check.sh --ccache) and then the host's
# CUDA build, which finds every object whose source, flags, headers and compiler are the same.
#
#   scripts/ccache-env.sh DIR
#
# The compiler is recognised by its contents, not its timestamp, since the chroot's g++ and the
# host's are two installs of one Debian package. CMake reads the launcher variables when it first
# configures a build directory.
set -euo pipefail
dir="${1:?usage: scripts/ccache-env.sh DIR}"
printf '%s\n' \
  "CCACHE_DIR=$dir" \
  CCACHE_COMPILERCHECK=content \
  CCACHE_MAXSIZE=20G \
  CMAKE_C_COMPILER_LAUNCHER=ccache \
  CMAKE_CXX_COMPILER_LAUNCHER=ccache

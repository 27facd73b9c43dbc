#!/usr/bin/env bash
# Builds CMake targets with the compiler's output in a log, showing only progress: one line that
# grows by a step each tenth of the build. On failure, the log's end and its path.
#
#   scripts/build-quietly.sh BUILD_DIR JOBS LOG TARGET...
set -uo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 BUILD_DIR JOBS LOG TARGET..." >&2
  exit 2
fi
dir="$1" jobs="$2" log="$3"
shift 3

printf 'building %s (log: %s):' "$*" "$log"
cmake --build "$dir" -j "$jobs" --target "$@" 2>&1 | tee "$log" | awk '
  /^\[ *[0-9]+%\]/ {
    p = substr($0, 2, index($0, "%") - 2) + 0
    if (p >= next_step) { printf " %d%%", p; fflush(); next_step = p - p % 10 + 10 }
  }'
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo
  tail -n 60 "$log"
  echo "the build failed (exit $status); its whole log is $log" >&2
  exit "$status"
fi
echo " done"

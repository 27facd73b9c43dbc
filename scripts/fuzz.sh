#!/usr/bin/env bash
# Builds the fuzz targets of fuzz/ (clang, libFuzzer, AddressSanitizer, UBSan; fuzz/fuzz.cmake) in
# their own build directory and runs each for a bounded time, one process each. Exits non-zero if
# any target found a crash, a leak, a sanitizer error, a failed check or a slow input, after
# printing the path of the input that did it (a regression to add to fuzz/corpus/<target>/ with
# its fix; fuzz/README.md).
#
#   scripts/fuzz.sh [seconds-per-target] [target...]     default: 30 seconds, every target
#
# New inputs that reach new code are kept in <build>/corpus/<target>/, never in the checked-in
# corpus. FUZZ_BUILD_DIR (build-fuzz) and JOBS (nproc) are read from the environment.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-30}"
shift || true
build="${FUZZ_BUILD_DIR:-build-fuzz}"
jobs="${JOBS:-$(nproc)}"
all_targets=(fuzz_spec fuzz_rest fuzz_ckpt fuzz_weights fuzz_shard fuzz_step_reducer fuzz_tokenizer fuzz_logs)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=("${all_targets[@]}"); fi

started=$(date +%s)
mkdir -p "$build"
cmake -S . -B "$build" -C fuzz/fuzz.cmake >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$jobs" --target "${targets[@]}" >"$build/build.log" 2>&1 || { tail -50 "$build/build.log"; exit 1; }
echo "fuzz: built ${#targets[@]} targets in $(($(date +%s) - started)) s"

failed=0
for target in "${targets[@]}"; do
  corpus="$build/corpus/$target"
  crashes="$build/crashes/$target"
  log="$build/$target.log"
  mkdir -p "$corpus" "$crashes"
  # -timeout: an input slower than this is a finding too (a hang); -rss_limit_mb also bounds
  # any single allocation, so a size field that asks for gigabytes is reported as such.
  # The outer timeout: libFuzzer's own report of running out of memory profiles the whole heap,
  # which can take longer than the run itself; a target that overstays is a failure too.
  if timeout -k 10 $((seconds + 120)) "$build/fuzz/$target" -max_total_time="$seconds" -timeout=30 \
      -rss_limit_mb=2048 -artifact_prefix="$crashes/" -print_final_stats=1 "$corpus" "fuzz/corpus/$target" \
      >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz: $target ok (${runs:-?} inputs in $seconds s)"
  else
    failed=1
    echo "fuzz: $target FAILED; the end of its log ($log):"
    grep -v '^#\|^INFO\|^stat::\|^\[libprotobuf' "$log" | tail -40
    for input in "$crashes"/*; do
      [ -e "$input" ] && echo "fuzz: $target: input that fails: $input (replay: $build/fuzz/$target $input)"
    done
  fi
done
echo "fuzz: done in $(($(date +%s) - started)) s"
exit $failed

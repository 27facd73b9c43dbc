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
#
# fuzz_sentencepiece is built apart, in <build>-plugin/ without AddressSanitizer (UBSan only):
# the SentencePiece plugin is opened with RTLD_DEEPBIND, which AddressSanitizer's runtime refuses.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-30}"
shift || true
build="${FUZZ_BUILD_DIR:-build-fuzz}"
jobs="${JOBS:-$(nproc)}"
all_targets=(fuzz_spec fuzz_rest fuzz_ckpt fuzz_weights fuzz_shard fuzz_step_reducer fuzz_tokenizer fuzz_logs
  fuzz_cli_answers fuzz_sentencepiece)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=("${all_targets[@]}"); fi

# The build directory of a target: the plugin's apart.
build_of() { if [ "$1" = fuzz_sentencepiece ]; then echo "$build-plugin"; else echo "$build"; fi; }

# build DIR [cmake -D options...]: configures DIR with fuzz/fuzz.cmake and builds its targets.
build_targets() {
  local dir="$1" wanted=() t
  shift
  for t in "${targets[@]}"; do [ "$(build_of "$t")" = "$dir" ] && wanted+=("$t"); done
  [ ${#wanted[@]} -eq 0 ] && return 0
  mkdir -p "$dir"
  cmake -S . -B "$dir" "$@" -C fuzz/fuzz.cmake >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; return 1; }
  if ! grep -q "SentencePiece tokenizers ON" "$dir/configure.log" && [[ " ${wanted[*]} " == *" fuzz_sentencepiece "* ]]; then
    echo "fuzz: libsentencepiece-dev is not installed: fuzz_sentencepiece cannot be built"
    return 1
  fi
  cmake --build "$dir" -j "$jobs" --target "${wanted[@]}" >"$dir/build.log" 2>&1 || { tail -50 "$dir/build.log"; return 1; }
}

started=$(date +%s)
build_targets "$build" -DGRADSYNC_FUZZ_SANITIZERS=address,undefined
build_targets "$build-plugin" -DGRADSYNC_FUZZ_SANITIZERS=undefined
echo "fuzz: built ${#targets[@]} targets in $(($(date +%s) - started)) s"

failed=0
for target in "${targets[@]}"; do
  dir="$(build_of "$target")"
  corpus="$dir/corpus/$target"
  crashes="$dir/crashes/$target"
  log="$dir/$target.log"
  mkdir -p "$corpus" "$crashes"
  # -timeout: an input slower than this is a finding too (a hang); -rss_limit_mb also bounds
  # any single allocation, so a size field that asks for gigabytes is reported as such.
  # The outer timeout: libFuzzer's own report of running out of memory profiles the whole heap,
  # which can take longer than the run itself; a target that overstays is a failure too.
  if timeout -k 10 $((seconds + 120)) "$dir/fuzz/$target" -max_total_time="$seconds" -timeout=30 \
      -rss_limit_mb=2048 -artifact_prefix="$crashes/" -print_final_stats=1 "$corpus" "fuzz/corpus/$target" \
      >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz: $target ok (${runs:-?} inputs in $seconds s)"
  else
    failed=1
    echo "fuzz: $target FAILED; the end of its log ($log):"
    grep -v '^#\|^INFO\|^stat::\|^\[libprotobuf' "$log" | tail -40
    for input in "$crashes"/*; do
      [ -e "$input" ] && echo "fuzz: $target: input that fails: $input (replay: $dir/fuzz/$target $input)"
    done
  fi
done
echo "fuzz: done in $(($(date +%s) - started)) s"
exit $failed

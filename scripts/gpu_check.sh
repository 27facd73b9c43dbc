#!/usr/bin/env bash
# Everything in gradsync that needs a GPU, in one run on a machine with one: the GPU test binaries
# (they skip where no GPU is present, so CI never runs them), the GPT-2 124M comparison with
# PyTorch (bench/compare_gpu.sh) for each of gradsync's bf16 attention kernels, and where one
# training step's GPU time goes, kernel by kernel (bench/kernel_profile.sh). Full logs go to
# OUT_DIR; a summary goes to stdout. Exits non-zero if anything failed.
#
#   scripts/gpu_check.sh [--bundle ARCHIVE] [--list] [BUILD_DIR (build)] [OUT_DIR (BUILD_DIR/gpu-check)]
#
#   --bundle ARCHIVE  run a build made elsewhere (scripts/gpu-bundle.sh), for a GPU machine that
#                     lacks gradsync's Debian libraries: unpacked into build-gpu-bundle/, its
#                     compiled-in source and build paths pointed at this checkout, its libraries
#                     and the CUDA toolkit's (wherever this machine keeps them) put on the
#                     loader's path. BUILD_DIR is then the unpacked bundle.
#   --list            only load each test binary and count its tests (no GPU needed): a check
#                     that a bundle is complete on this machine
#   TESTS="kernels_cuda_test ..." (default: every GPU test binary), GTEST_FILTER=... (passed on),
#   ATTENTIONS="products flash" (the comparisons to run; empty: none), PROFILE=0 (no profile),
#   PY=python3 (for PyTorch; run without the bundle's libraries on the loader's path).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

bundle=""
list_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle="${2:?--bundle needs an archive}"; shift 2 ;;
    --list) list_only=1; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu_check.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done

TESTS=${TESTS-kernels_cuda_test nn_cuda_test comm_nccl_test worker_gpu_test worker_gpu_metrics_test integration_gpu_test}
ATTENTIONS=${ATTENTIONS-products flash}
PROFILE=${PROFILE:-1}
BUILD=${1:-build}
status=0

if [ -n "$bundle" ]; then
  # shellcheck source=scripts/gpu_bundle_use.sh
  . scripts/gpu_bundle_use.sh
  BUILD="$(use_gpu_bundle "$bundle" "$repo")"
  export LD_LIBRARY_PATH="$(gpu_bundle_library_path "$BUILD")"
  echo "gpu_check.sh: bundle in $BUILD: $(sed -n 's/^built=//p' "$BUILD/paths")"
  PY=${PY:-env -u LD_LIBRARY_PATH python3}
fi
OUT=${2:-$BUILD/gpu-check}
mkdir -p "$OUT"
export PY=${PY:-python3}

if [ "$list_only" -eq 1 ]; then
  for t in $TESTS; do
    if n=$("$BUILD/tests/$t" --gtest_list_tests 2>"$OUT/$t.list.err" | grep -c '^  '); then
      echo "$t: loads, $n tests"
    else
      echo "$t: does not load: $(head -n 1 "$OUT/$t.list.err")"
      status=1
    fi
  done
  exit $status
fi

if ! nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$OUT/device.txt" 2>&1; then
  echo "gpu_check.sh: no GPU visible (nvidia-smi: $(head -n 1 "$OUT/device.txt")); every GPU test would skip" >&2
  exit 1
fi
cat "$OUT/device.txt"

for t in $TESTS; do
  bin="$BUILD/tests/$t"
  if [ ! -x "$bin" ]; then
    echo "$t: not built (configure with CUDA)"
    status=1
    continue
  fi
  if "$bin" --gtest_brief=1 >"$OUT/$t.log" 2>&1; then
    result=passed
  else
    result=FAILED
    status=1
  fi
  # gtest's closing lines: how many ran, passed, skipped, failed.
  counts=$(grep -E '^\[ +(PASSED|SKIPPED|FAILED) +\]' "$OUT/$t.log" | sed 's/^\[ *//; s/ *\] */ /' | paste -sd ';' -)
  echo "$t: $result, $counts"
done

for a in $ATTENTIONS; do
  log="$OUT/compare-$a.log"
  if ATTENTION=$a sh bench/compare_gpu.sh "$BUILD" >"$log" 2>&1; then
    echo "compare_gpu.sh with $a attention:"
    grep -E '^step |tokens/s|MFU|ratio' "$log" | sed 's/^/  /'
  else
    echo "compare_gpu.sh with $a attention: FAILED (see $log)"
    status=1
  fi
done

if [ "$PROFILE" != 0 ]; then
  for a in ${ATTENTIONS:-products}; do
    log="$OUT/profile-$a.log"
    if ATTENTION=$a bash bench/kernel_profile.sh "$BUILD" "$OUT/profile-$a" >"$log" 2>&1; then
      echo "one gpt2-124m step's kernels with $a attention (bench/kernel_profile.sh):"
      sed -n '/^kernel/,$p' "$log" | head -n 16 | sed 's/^/  /'
    else
      echo "kernel_profile.sh with $a attention: FAILED (see $log)"
      status=1
    fi
  done
fi
exit $status

#!/bin/sh
# Everything in gradsync that needs a GPU, in one run on a machine with one, after a CUDA build:
# the GPU test binaries (they skip where no GPU is present, so CI never runs them), then the
# GPT-2 124M comparison with PyTorch (bench/compare_gpu.sh) for each of gradsync's bf16 attention
# kernels. Full logs go to OUT_DIR; a summary goes to stdout. Exits non-zero if anything failed.
# Usage: scripts/gpu_check.sh [BUILD_DIR (default build)] [OUT_DIR (default BUILD_DIR/gpu-check)]
#   TESTS="kernels_cuda_test ..." (default: every GPU test binary), GTEST_FILTER=... (passed on),
#   ATTENTIONS="products flash" (the comparisons to run; empty: none), PY=python3 (for PyTorch).
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-$BUILD/gpu-check}
TESTS=${TESTS-kernels_cuda_test nn_cuda_test comm_nccl_test worker_gpu_test integration_gpu_test}
ATTENTIONS=${ATTENTIONS-products flash}
mkdir -p "$OUT"
status=0

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
exit $status

#!/usr/bin/env bash
# Where one training step's GPU time goes, kernel by kernel. gradsync-model-bench runs twice under
# Nsight Compute (ncu, one metric: each kernel's duration), with no warm-up and one step, then
# two; the difference of the two runs is one step, free of the start-up's work (initialisation,
# plans, first-touch allocations). bench/kernel_summary.py prints the table.
#
#   bench/kernel_profile.sh [BUILD_DIR (build)] [OUT_PREFIX (BUILD_DIR/kernel-profile)]
#   PRESET=gpt2-124m BATCH=16 PRECISION=bf16 ATTENTION=products|flash|fused NCU=ncu PY=python3
#
# ncu serialises kernels and leaves the clocks alone (--clock-control none), so the durations are
# each kernel's own, not the step's wall time with its overlaps; their sum is close to the step
# when one stream does the work, as in a one-rank run.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-$BUILD/kernel-profile}
PRESET=${PRESET:-gpt2-124m}
BATCH=${BATCH:-16}
PRECISION=${PRECISION:-bf16}
ATTENTION=${ATTENTION:-products}
PY=${PY:-python3}
if [ -z "${NCU:-}" ]; then
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1 || true)
fi
[ -n "$NCU" ] && [ -x "$NCU" ] || { echo "kernel_profile.sh: Nsight Compute (ncu) not found" >&2; exit 2; }
mkdir -p "$(dirname "$OUT")"

for steps in 1 2; do
  "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --page raw --print-units base \
    --print-kernel-base function --log-file "$OUT-$steps.csv" \
    "$BUILD/bin/gradsync-model-bench" --preset "$PRESET" --device cuda --precision "$PRECISION" \
    --attention "$ATTENTION" --batch "$BATCH" --warmup 0 --steps "$steps" > "$OUT-$steps.out" 2>&1 \
    || { tail -n 20 "$OUT-$steps.out" >&2; echo "kernel_profile.sh: the $steps-step run failed" >&2; exit 1; }
done
echo "$PRESET, $PRECISION, $ATTENTION attention, batch $BATCH: one step (2-step run less 1-step run)"
$PY bench/kernel_summary.py "$OUT-1.csv" "$OUT-2.csv"

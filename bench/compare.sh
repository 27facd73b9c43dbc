#!/bin/sh
# gpt-tiny training throughput on this CPU, gradsync against PyTorch (eager, fp32) on the same
# model (gpt2 L4 H4 C128 M512 T128 V256, tied embeddings), batch (8 x 128 tokens per rank) and
# optimizer (AdamW), one thread per process:
#   single  gradsync-model-bench                        vs bench/pytorch/gpt_train.py
#   2-rank  gradsync-bench ddp --ranks 2 (Gloo)         vs bench/pytorch/ddp_train.py (DDP, Gloo)
# Usage: bench/compare.sh [BUILD_DIR (default build)]; STEPS=N timed steps (default 30).
# Needs `apt-get install python3-torch libopenblas0` (Debian's PyTorch, run by /usr/bin/python3).
# Figures on a shared machine are noisy: run it twice.
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
STEPS=${STEPS:-30}
PY=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
# One BLAS thread from the start on both sides (bench/pytorch/options.py does the same for torch):
# OpenBLAS reads it as it loads, and an idle pool thread would take time from the other rank.
export OPENBLAS_NUM_THREADS=1

# The number before "tokens/s" on the line matching $1 of the output of the rest.
tokens_per_second() {
  pattern=$1
  shift
  out=$("$@" 2>&1) || { echo "$out" >&2; echo "failed: $*" >&2; exit 1; }
  value=$(echo "$out" | grep -- "$pattern" | head -n 1 | grep -o '[0-9][0-9]* tokens/s' | cut -d ' ' -f 1)
  [ -n "$value" ] || { echo "$out" >&2; echo "no tokens/s in the output of: $*" >&2; exit 1; }
  echo "$value"
}

ours_1=$(tokens_per_second "tokens/s" "$BUILD/bin/gradsync-model-bench" --preset gpt-tiny --batch 8 \
  --steps "$STEPS" --threads 1)
torch_1=$(tokens_per_second "tokens/s" $PY bench/pytorch/gpt_train.py --batch 8 --steps "$STEPS" --threads 1)
ours_2=$(tokens_per_second "step with communication" "$BUILD/bin/gradsync-bench" ddp --ranks 2 \
  --spec examples/jobs/demo.yaml --set training.microBatch=8 --steps "$STEPS")
torch_2=$(tokens_per_second "tokens/s" $PY bench/pytorch/ddp_train.py --ranks 2 --batch 8 --steps "$STEPS" \
  --threads 1)

echo "gpt-tiny, fp32, AdamW, batch 8 x 128 tokens per rank, 1 thread per process, $STEPS steps"
printf '%-28s %12s %12s %8s\n' "" "gradsync" "pytorch" "ratio"
awk -v o="$ours_1" -v t="$torch_1" 'BEGIN { printf "%-28s %12d %12d %7.2fx\n", "1 process (tokens/s)", o, t, o / t }'
awk -v o="$ours_2" -v t="$torch_2" 'BEGIN { printf "%-28s %12d %12d %7.2fx\n", "2 ranks, Gloo (tokens/s)", o, t, o / t }'

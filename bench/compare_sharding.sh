#!/bin/sh
# Sharded data parallel on 2 CPU ranks, gradsync against PyTorch, back to back on one model preset
# and batch, one thread per rank: throughput and each rank's peak RSS (VmHWM) of
#   gradsync-bench ddp --ranks 2 --set ddp.sharding=none|optimizer|gradients|full
#   bench/pytorch/zero_train.py --optimizer adamw|zero   (DDP over Gloo; zero: ZeroRedundancyOptimizer)
# Usage: bench/compare_sharding.sh [BUILD_DIR (default build)]
#   PRESET=gpt-tiny|minimind-26m|gpt2-124m (default gpt-tiny)  BATCH=sequences per rank (default 8)
#   STEPS=timed steps after 3 warm-up steps (default 30)  RUNS=rounds of all six (default 1)
#   SEQ_LEN=N, VOCAB=N override the preset's sequence length and vocabulary on both sides (the
#   bench trains on examples/jobs/demo.yaml's text, whose bytes want VOCAB=256 for gpt2-124m).
# Needs `apt-get install python3-torch libopenblas0` (Debian's PyTorch, run by /usr/bin/python3).
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PRESET=${PRESET:-gpt-tiny}
BATCH=${BATCH:-8}
STEPS=${STEPS:-30}
RUNS=${RUNS:-1}
SEQ_LEN=${SEQ_LEN:-}
VOCAB=${VOCAB:-}
PY=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
export OPENBLAS_NUM_THREADS=1     # as compare.sh: one BLAS thread per process from the start

ours_seq=""
torch_seq=""
if [ -n "$SEQ_LEN" ]; then
  ours_seq="--set model.transformer.seqLen=$SEQ_LEN"
  torch_seq="--seq-len $SEQ_LEN"
fi
if [ -n "$VOCAB" ]; then
  ours_seq="$ours_seq --set model.transformer.vocabSize=$VOCAB"
  torch_seq="$torch_seq --vocab $VOCAB"
fi

# Runs the rest; prints "<tokens/s> <peak RSS MiB of rank 0> <of rank 1>" from its output, whose
# throughput is on the first line matching $1 and whose per-rank peaks are on "rank N" lines
# (field $2 of them).
measure() {
  pattern=$1
  field=$2
  shift 2
  out=$("$@" 2>&1) || { echo "$out" >&2; echo "failed: $*" >&2; exit 1; }
  tps=$(echo "$out" | grep -- "$pattern" | head -n 1 | grep -o '[0-9][0-9]* tokens/s' | cut -d ' ' -f 1)
  peaks=$(echo "$out" | grep '^rank [0-9]' | awk -v f="$field" '{ printf "%s ", $f }')
  [ -n "$tps" ] && [ -n "$peaks" ] || { echo "$out" >&2; echo "no figures in the output of: $*" >&2; exit 1; }
  echo "$tps $peaks"
}

echo "$PRESET, fp32, AdamW, batch $BATCH per rank, 2 ranks x 1 thread, $STEPS steps after 3 warm-up"
printf '%-34s %12s %14s %14s\n' "" "tokens/s" "rank 0 MiB" "rank 1 MiB"
run=1
while [ "$run" -le "$RUNS" ]; do
  for mode in none optimizer gradients full; do
    # shellcheck disable=SC2086 # $ours_seq is words or none
    figures=$(measure "step with communication" 3 "$BUILD/bin/gradsync-bench" ddp --ranks 2 \
      --spec examples/jobs/demo.yaml --set model.preset="$PRESET" --set training.microBatch="$BATCH" \
      $ours_seq --set ddp.sharding="$mode" --steps "$STEPS" --local-steps 0) || exit 1
    set -- $figures
    printf '%-34s %12s %14s %14s\n' "gradsync sharding=$mode" "$1" "$2" "$3"
  done
  for optimizer in adamw zero; do
    # shellcheck disable=SC2086
    figures=$(measure "tokens/s" 5 $PY bench/pytorch/zero_train.py --ranks 2 --preset "$PRESET" \
      --batch "$BATCH" $torch_seq --steps "$STEPS" --warmup 3 --threads 1 --optimizer "$optimizer") || exit 1
    set -- $figures
    printf '%-34s %12s %14s %14s\n' "pytorch DDP + $optimizer" "$1" "$2" "$3"
  done
  run=$((run + 1))
done

#!/bin/sh
# GPT-2 124M training throughput on one GPU, gradsync against PyTorch (torch.compile, fused
# attention, fused AdamW) on the same model (gpt2 L12 H12 C768 M3072 T1024 V50257, tied
# embeddings), batch (BATCH sequences of 1024 tokens, default 16) and precision (PRECISION,
# default bf16: bf16 compute, fp32 master weights and optimizer state):
#   gradsync-model-bench --preset gpt2-124m --device cuda   vs   bench/pytorch/gpt_train_gpu.py
# Both print model FLOPs utilisation against the matmul rate they measure on the card.
# Usage: bench/compare_gpu.sh [BUILD_DIR (default build)]; STEPS=N timed steps (default 20);
# ATTENTION=products|flash|fused (gradsync's bf16 attention kernels, default products);
# PY=python3 (any PyTorch 2 with CUDA).
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
STEPS=${STEPS:-20}
BATCH=${BATCH:-16}
PRECISION=${PRECISION:-bf16}
ATTENTION=${ATTENTION:-products}
PY=${PY:-python3}
export PYTHONDONTWRITEBYTECODE=1

run() {
  out=$("$@" 2>&1) || { echo "$out" >&2; echo "failed: $*" >&2; exit 1; }
  echo "$out" >&2
  echo "$out" | grep -o '[0-9][0-9]* tokens/s' | head -n 1 | cut -d ' ' -f 1
}

ours=$(run "$BUILD/bin/gradsync-model-bench" --preset gpt2-124m --device cuda --precision "$PRECISION" \
  --attention "$ATTENTION" --batch "$BATCH" --steps "$STEPS")
torch=$(run $PY bench/pytorch/gpt_train_gpu.py --layers 12 --heads 12 --width 768 --mlp-width 3072 \
  --seq-len 1024 --vocab 50257 --batch "$BATCH" --steps "$STEPS" --warmup 5 --precision "$PRECISION")

echo "gpt2-124m, $PRECISION ($ATTENTION attention), batch $BATCH x 1024 tokens, $STEPS steps"
printf '%-28s %12s %12s %8s\n' "" "gradsync" "pytorch" "ratio"
awk -v o="$ours" -v t="$torch" 'BEGIN { printf "%-28s %12d %12d %7.2fx\n", "1 GPU (tokens/s)", o, t, o / t }'

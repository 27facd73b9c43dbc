#!/usr/bin/env bash
# The same DDP script (bench/pytorch/script_ddp.py, gpt-tiny, 2 ranks on CPU) under torchrun with
# torch's Gloo all-reduce, under `gradsync run` with torch's Gloo all-reduce (the launcher alone:
# a local cluster binds each rank to its share of the CPUs), and under `gradsync run` with
# gradsync.torch's exchange; prints the three throughputs and the last over the first. Needs Debian's python3-torch (/usr/bin/python3) and a build.
#
#   bench/compare_script.sh [BUILD_DIR]     STEPS=N timed steps (default 30), RUNS=N pairs (default 3)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../build}" && pwd)"
steps="${STEPS:-30}"
runs="${RUNS:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
script=(/usr/bin/python3 "$here/pytorch/script_ddp.py" --steps "$steps" --warmup 3)

tokens_per_second() { grep -o '"tokens_per_second": [0-9.]*' | tail -1 | awk '{print $2}'; }

for run in $(seq "$runs"); do
  # torchrun 1.13 on Python 3.11 needs non-zero --redirects/--tee (see ../shared notes in the docs).
  OMP_NUM_THREADS=1 /usr/bin/torchrun --nproc_per_node 2 --redirects 1 --tee 1 --log_dir "$work/torchrun-$run" \
    "${script[@]:1}" --exchange gloo > "$work/torchrun-$run.out" 2>&1
  torch=$(tokens_per_second < "$work/torchrun-$run.out")
  for exchange in gloo gradsync; do
    (cd "$work" && "$build/bin/gradsync" run --workers 2 --state-dir "$work/$exchange-$run" -o json \
      -- "${script[@]}" --exchange "$exchange" > "$work/$exchange-$run.json" 2> "$work/$exchange-$run.err")
  done
  launcher=$(cat "$work"/gloo-$run/logs/jobs/*/rank-0.log | tokens_per_second)
  ours=$(cat "$work"/gradsync-$run/logs/jobs/*/rank-0.log | tokens_per_second)
  awk -v t="$torch" -v l="$launcher" -v g="$ours" -v r="$run" 'BEGIN {
    printf "run %d: torchrun + Gloo %.0f tokens/s | gradsync run + Gloo %.0f | gradsync run + exchange %.0f | exchange / torchrun %.2fx\n",
           r, t, l, g, g / t }'
done

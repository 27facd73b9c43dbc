#!/usr/bin/env bash
# Streamed shards at the size of real runs: gpt-tiny trained by 2 CPU ranks under `gradsync run` on
# a generated set of SHARDS llm.c shards (default 40) holding SIZE_GB in all (default 8), against
# the same job on a 10 MB set. Prints, for each run, every rank's peak RSS (from the job's result)
# and the steady-state tokens/s, then the large set's over the small one's. The shards are random
# byte-valued tokens (gpt-tiny's vocabulary is 256), written once and kept in DIR.
#
#   bench/compare_data_scale.sh [BUILD_DIR]     DIR (default BUILD_DIR/bench-data), SIZE_GB, SHARDS,
#                                               STEPS=N steps a run (default 200), RUNS=N pairs (default 2)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../build}" && pwd)"
dir="${DIR:-$build/bench-data}"
size_gb="${SIZE_GB:-8}"
shards="${SHARDS:-40}"
steps="${STEPS:-200}"
runs="${RUNS:-2}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# make_set NAME BYTES_TOTAL COUNT: COUNT uint16 shards of NAME_*.bin in DIR/NAME, kept when present.
make_set() {
  local name="$1" total="$2" count="$3"
  mkdir -p "$dir/$name"
  /usr/bin/python3 - "$dir/$name" "$total" "$count" <<'PY'
import os, sys, numpy as np
out, total, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tokens = total // 2 // count
header = np.zeros(256, dtype=np.int32)
header[:3] = (20240520, 1, tokens)
rng = np.random.default_rng(1)
for i in range(count):
    path = os.path.join(out, f"train_{i:06d}.bin")
    if os.path.exists(path) and os.path.getsize(path) == 1024 + 2 * tokens:
        continue
    with open(path + ".tmp", "wb") as f:
        f.write(header.tobytes())
        left = tokens
        while left:
            n = min(left, 1 << 26)
            f.write(rng.integers(0, 256, n, dtype=np.uint16).tobytes())
            left -= n
    os.rename(path + ".tmp", path)
PY
}

echo "writing the shard sets in $dir (kept for later runs)"
make_set small $((10 << 20)) 1
make_set large $((size_gb << 30)) "$shards"
du -sh "$dir/small" "$dir/large"

# run NAME: the job on DIR/NAME's shards; prints "peak_rss_rank0 peak_rss_rank1 tokens_per_second".
run() {
  (cd "$dir" && "$build/bin/gradsync" run "$here/../examples/jobs/gpt-tiny-shards.yaml" --workers 2 \
    --state-dir "$work/$1" -o json --set "data.shards.paths=[\"$1/train_*.bin\"]" --set data.validation.disabled=true \
    --set training.epochs=0 --set "training.maxSteps=$steps" --set training.logEvery=50 > "$work/$1.json" 2> "$work/$1.err") \
    || { tail -20 "$work/$1.err"; exit 1; }
  /usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
rss = sorted(s["memory"], key=lambda m: m["rank"])
print(" ".join(str(int(m["peakRssBytes"])) for m in rss), s["tokensPerSecond"])' "$work/$1.json"
}

for r in $(seq "$runs"); do
  read -r small0 small1 small_tps < <(run small)
  read -r large0 large1 large_tps < <(run large)
  awk -v r="$r" -v s0="$small0" -v s1="$small1" -v st="$small_tps" -v l0="$large0" -v l1="$large1" -v lt="$large_tps" 'BEGIN {
    printf "run %d: 10 MB: peak RSS %.1f / %.1f MiB, %.0f tokens/s | large: peak RSS %.1f / %.1f MiB, %.0f tokens/s | RSS %.3fx, tokens/s %.3fx\n",
      r, s0 / 1048576, s1 / 1048576, st, l0 / 1048576, l1 / 1048576, lt, (l0 > l1 ? l0 : l1) / (s0 > s1 ? s0 : s1), lt / st }'
done

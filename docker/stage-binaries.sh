#!/usr/bin/env bash
# The images' binaries, staged from a CPU build directory (GRADSYNC_CUDA=OFF) for docker/Dockerfile:
#
#   stage-binaries.sh BUILD_DIR OUT_DIR
#
# OUT_DIR gets bin/ (gradsync, gradsync-coordinator, gradsync-metrics, gradsync-worker, without
# their debug sections), plugins/ (the SentencePiece plugin, when the build has it), python/ (the
# gradsync Python package with its extension, when the build has it: the worker image's
# /usr/local/lib/gradsync/python, which script jobs find on PYTHONPATH) and deps/
# (runtime-deps.sh and, per image, the packages its binaries load). The Dockerfile's build stage
# runs it on the build it just made; scripts/fresh-machine-check.sh --binaries-out runs it on the
# build of its fresh Debian 12, so that CI's image builds need not compile again
# (scripts/images.sh --binaries).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: stage-binaries.sh BUILD_DIR OUT_DIR" >&2; exit 2; }
build="$1" out="$2"
here="$(cd "$(dirname "$0")" && pwd)"
plugin=libgradsync_sentencepiece.so

mkdir -p "$out/bin" "$out/deps" "$out/plugins" "$out/python"
for b in gradsync gradsync-coordinator gradsync-metrics gradsync-worker; do
  [ -x "$build/bin/$b" ] || { echo "stage-binaries: $build/bin/$b is missing; build it first" >&2; exit 1; }
  objcopy --strip-debug "$build/bin/$b" "$out/bin/$b"
done
if [ -f "$build/bin/$plugin" ]; then objcopy --strip-debug "$build/bin/$plugin" "$out/plugins/$plugin"; fi
native=$(ls "$build"/python/gradsync/_native*.so 2>/dev/null | head -1 || true)
if [ -n "$native" ]; then
  cp -r "$build/python/gradsync" "$out/python/"
  find "$out/python" -name __pycache__ -prune -exec rm -rf {} +
  objcopy --strip-debug "$native" "$out/python/gradsync/$(basename "$native")"
fi
cp "$here/runtime-deps.sh" "$out/deps/"
deps="$here/runtime-deps.sh"
"$deps" "$out/bin/gradsync" $(ls "$out"/plugins/*.so 2>/dev/null) > "$out/deps/cli.txt"
"$deps" "$out/bin/gradsync" "$out/bin/gradsync-coordinator" > "$out/deps/coordinator.txt"
"$deps" "$out/bin/gradsync" "$out/bin/gradsync-metrics" > "$out/deps/metrics.txt"
"$deps" "$out/bin/gradsync" "$out/bin/gradsync-worker" $(ls "$out"/python/gradsync/_native*.so 2>/dev/null) \
  > "$out/deps/worker.txt"

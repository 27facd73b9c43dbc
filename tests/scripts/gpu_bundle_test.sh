#!/usr/bin/env bash
# scripts/gpu-bundle.sh over this CUDA build, and the bundle set up as scripts/gpu_check.sh
# --bundle sets it up: every GPU test binary and the binaries they start are in it, stripped;
# every shared library they load comes from the bundle except the C runtime's and the CUDA
# toolkit's and driver's; each test binary loads from it and lists its tests; the compiled-in
# paths are recorded; and the links that point those paths at a checkout are made only where
# nothing is.
set -euo pipefail
repo="${1:?usage: gpu_bundle_test.sh REPO BUILD}"
build="${2:?usage: gpu_bundle_test.sh REPO BUILD}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$repo/scripts/gpu-bundle.sh" --dir "$work" "$build"
b="$work/bundle"
tests=(kernels_cuda_test nn_cuda_test comm_nccl_test worker_gpu_test worker_gpu_metrics_test integration_gpu_test)
bins=(gradsync gradsync-coordinator gradsync-worker gradsync-metrics gradsync-model-bench gradsync-bench)
for f in "${tests[@]/#/tests/}" "${bins[@]/#/bin/}" tests/worker/libfake_nvml.so; do
  [ -f "$b/$f" ] || fail "$f is not in the bundle"
done
for f in "${tests[@]/#/tests/}" "${bins[@]/#/bin/}"; do
  if readelf -S "$b/$f" | grep -q '\.debug_info'; then fail "$f keeps its debug information"; fi
done

# What the GPU machine provides itself; everything else must resolve inside the bundle.
c_runtime_or_cuda() {
  case "$1" in
    linux-vdso.so.*|ld-linux*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libstdc++.so.*|libgcc_s.so.*) return 0 ;;
    libcuda.so.*|libnvidia-*|libcudart.so.*|libcublas.so.*|libcublasLt.so.*|libnccl.so.*) return 0 ;;
  esac
  return 1
}
for f in "${tests[@]/#/tests/}" "${bins[@]/#/bin/}"; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [ "$path" != not ] || fail "$f: $name not found"
    c_runtime_or_cuda "$name" && continue
    case "$path" in "$b/lib/"*) ;; *) fail "$f loads $name from $path, outside the bundle" ;; esac
  done < <(LD_LIBRARY_PATH="$b/lib" ldd "$b/$f")
done
[ -n "$(ls "$b/lib")" ] || fail "no libraries bundled"
ls "$b/lib" | grep -q '^libgrpc++' || fail "gRPC is not bundled"
if ls "$b/lib" | grep -Eq '^(libc|libcudart|libnccl|libcublas)\.'; then fail "a library the GPU machine provides is bundled"; fi

grep -qx "source_dir=$repo" "$b/paths" || fail "paths: source_dir is not $repo: $(cat "$b/paths")"
grep -qx "build_dir=$(cd "$build" && pwd)" "$b/paths" || fail "paths: build_dir: $(cat "$b/paths")"

out="$(cd "$repo" && TESTS="${tests[*]}" bash scripts/gpu_check.sh --bundle "$work" --list)"
echo "$out"
for t in "${tests[@]}"; do
  echo "$out" | grep -Eq "^$t: loads, [1-9][0-9]* tests$" || fail "$t does not load from the bundle"
done

# The compiled-in paths: a link where nothing is, nothing where the path already leads there,
# and a refusal where something else is.
# shellcheck source=scripts/gpu_bundle_use.sh
. "$repo/scripts/gpu_bundle_use.sh"
mkdir -p "$work/checkout" "$work/other"
gpu_bundle_link "$work/compiled/at/src" "$work/checkout" || fail "no link made where nothing was"
[ "$(readlink "$work/compiled/at/src")" = "$work/checkout" ] || fail "the link does not lead to the checkout"
gpu_bundle_link "$work/compiled/at/src" "$work/checkout" || fail "a link already leading there refused"
if gpu_bundle_link "$work/other" "$work/checkout" 2> "$work/err"; then fail "a directory in the way replaced"; fi
grep -q "already something else" "$work/err" || fail "the refusal does not say why: $(cat "$work/err")"
echo "gpu_bundle: ok"

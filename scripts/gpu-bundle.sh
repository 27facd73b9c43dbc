#!/usr/bin/env bash
# Packs a CUDA build's GPU checks into one archive for a GPU machine whose image has the CUDA
# toolkit, NCCL and PyTorch but none of the Debian libraries gradsync links (gRPC, Protobuf,
# Abseil, Gloo, OpenBLAS, ...), such as the device tool's: scripts/gpu_check.sh --bundle ARCHIVE
# runs it there.
#
#   scripts/gpu-bundle.sh [BUILD_DIR (build)] [ARCHIVE (build-gpu-bundle.tar.xz)]
#
# The archive holds, under bundle/:
#   tests/      the GPU test binaries (and what they load by path: fake_nvml)
#   bin/        the binaries those tests start and the benchmarks gpu_check.sh runs
#   lib/        every shared library they load except the C runtime's (libc, libm, libstdc++,
#               libgcc_s, the loader) and the CUDA toolkit's and driver's (libcudart, libcublas*,
#               libnccl, libcuda, libnvidia-*), which the GPU machine has in its own versions
#   paths       the source and build directories compiled into the binaries (the tests find the
#               daemons and the golden files there; gpu_check.sh points them at its checkout),
#               and what the binaries say they were built from
# Binaries are stripped of debug information. With --dir DIR the bundle is left as DIR/bundle
# instead of an archive, for a look or a test (tests/scripts/gpu_bundle_test.sh).
#
#   scripts/gpu-bundle.sh --dir DIR [BUILD_DIR]
set -euo pipefail

out_dir=""
if [ "${1:-}" = --dir ]; then
  out_dir="${2:?--dir needs a directory}"
  shift 2
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$repo/build}" && pwd)"
archive="${2:-$repo/build-gpu-bundle.tar.xz}"

TESTS="kernels_cuda_test nn_cuda_test comm_nccl_test worker_gpu_test worker_gpu_metrics_test integration_gpu_test"
BINS="gradsync gradsync-coordinator gradsync-worker gradsync-metrics gradsync-model-bench gradsync-bench"

for t in $TESTS; do
  [ -x "$build/tests/$t" ] || { echo "gpu-bundle: $build/tests/$t is not built (a CUDA build has it)" >&2; exit 2; }
done
for b in $BINS; do
  [ -x "$build/bin/$b" ] || { echo "gpu-bundle: $build/bin/$b is not built" >&2; exit 2; }
done

# Whether the GPU machine brings this library itself (its path as ldd resolved it, and its name).
provided_there() {
  case "$2" in
    linux-vdso.so.*|ld-linux*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*) return 0 ;;
    libstdc++.so.*|libgcc_s.so.*|libcuda.so.*|libnvidia-*|libcudart.so.*|libcublas*|libnccl.so.*) return 0 ;;
  esac
  case "$1" in /usr/local/cuda*) return 0 ;; esac
  return 1
}

staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
dest="${out_dir:-$staging}/bundle"
rm -rf "$dest"
mkdir -p "$dest/tests" "$dest/bin" "$dest/lib"

for t in $TESTS; do strip --strip-debug -o "$dest/tests/$t" "$build/tests/$t"; done
for b in $BINS; do strip --strip-debug -o "$dest/bin/$b" "$build/bin/$b"; done
if [ -e "$build/tests/worker/libfake_nvml.so" ]; then
  mkdir -p "$dest/tests/worker"
  cp "$build/tests/worker/libfake_nvml.so" "$dest/tests/worker/"
fi

missing=0
while read -r name path; do
  if [ "$path" = "not" ]; then
    echo "gpu-bundle: $name is not found on this machine" >&2
    missing=1
    continue
  fi
  provided_there "$path" "$name" && continue
  cp -L "$path" "$dest/lib/$name"
done < <(for f in "$dest"/tests/* "$dest"/bin/*; do [ -f "$f" ] && ldd "$f"; done \
           | awk '$2 == "=>" { print $1, $3 }' | sort -u)
[ "$missing" -eq 0 ] || exit 1

{
  echo "source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")"
  echo "build_dir=$build"
  echo "built=$("$build/bin/gradsync" --version)"
} > "$dest/paths"

if [ -n "$out_dir" ]; then
  echo "gpu-bundle: $dest ($(du -sh "$dest" | cut -f1))"
  exit 0
fi
tar -C "$staging" -cf - bundle | xz -T0 -6 > "$archive"
echo "gpu-bundle: $archive ($(du -h "$archive" | cut -f1); $(ls "$dest/lib" | wc -l) libraries)"

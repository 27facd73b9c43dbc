#!/usr/bin/env bash
# Prints, one a line, the OpenBLAS core types (OPENBLAS_CORETYPE values) whose x86-64 kernels
# this machine's CPU can execute, read from the flags in /proc/cpuinfo. OpenBLAS does not check
# a forced core type against the CPU (an unsupported one dies of SIGILL), so this table does.
#
#   scripts/openblas-coretypes.sh [CPUINFO]      (default /proc/cpuinfo)
#
# Each core type names the instruction-set flags its single-precision kernels need. The
# AMD-only types of the Bulldozer family (FMA4, XOP) and the 32-bit ones are left out.
set -euo pipefail

cpuinfo="${1:-/proc/cpuinfo}"
flags=" $(sed -n 's/^flags[[:space:]]*:[[:space:]]*//p' "$cpuinfo" | head -n 1) "

has_all() {
  local f
  for f in "$@"; do
    case "$flags" in *" $f "*) ;; *) return 1 ;; esac
  done
}

avx512="avx512f avx512cd avx512bw avx512dq avx512vl"
# core type | flags its kernels need
table=(
  "Prescott|pni"
  "Core2|pni ssse3"
  "Penryn|pni ssse3 sse4_1"
  "Nehalem|pni ssse3 sse4_1 sse4_2"
  "Sandybridge|sse4_2 avx"
  "Haswell|avx avx2 fma"
  "Zen|avx avx2 fma"
  "SkylakeX|avx2 fma $avx512"
  "Cooperlake|avx2 fma $avx512 avx512_bf16"
  "SapphireRapids|avx2 fma $avx512 avx512_bf16 avx512_fp16 amx_tile amx_bf16"
)

case "$(uname -m)" in
  x86_64) ;;
  *) exit 0 ;;  # other architectures: no forced core types; the caller runs the default only
esac

for row in "${table[@]}"; do
  name="${row%%|*}"
  # shellcheck disable=SC2086
  if has_all ${row#*|}; then echo "$name"; fi
done

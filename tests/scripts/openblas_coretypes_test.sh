#!/usr/bin/env bash
# scripts/openblas-coretypes.sh against /proc/cpuinfo flag lines of real CPU families: each lists
# exactly the OpenBLAS kernels that CPU can execute, and never one it cannot (SIGILL).
set -euo pipefail
if [ "$(uname -m)" != x86_64 ]; then echo "skipped: OpenBLAS core types are x86-64's"; exit 77; fi
script="$1/scripts/openblas-coretypes.sh"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
failures=0

expect() {
  local name="$1" flags="$2" want="$3" got
  printf 'processor\t: 0\nflags\t\t: %s\n' "$flags" > "$dir/$name"
  got="$(bash "$script" "$dir/$name" | tr '\n' ' ' | sed 's/ $//')"
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: got '$got', want '$want'"
    failures=$((failures + 1))
  else
    echo "ok   $name: $got"
  fi
}

sse="fpu sse sse2 pni ssse3 sse4_1 sse4_2 popcnt"
expect core2 "fpu sse sse2 pni ssse3" "Prescott Core2"
expect nehalem "$sse" "Prescott Core2 Penryn Nehalem"
expect sandybridge "$sse avx" "Prescott Core2 Penryn Nehalem Sandybridge"
expect zen3 "$sse avx avx2 fma sse4a" "Prescott Core2 Penryn Nehalem Sandybridge Haswell Zen"
expect skylake_sp "$sse avx avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl" \
  "Prescott Core2 Penryn Nehalem Sandybridge Haswell Zen SkylakeX"
expect cooper_lake "$sse avx avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16" \
  "Prescott Core2 Penryn Nehalem Sandybridge Haswell Zen SkylakeX Cooperlake"
expect sapphire_rapids "$sse avx avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8" \
  "Prescott Core2 Penryn Nehalem Sandybridge Haswell Zen SkylakeX Cooperlake SapphireRapids"
# A flag that merely starts like a needed one does not count.
expect prefix_only "$sse avx avx2x fmax" "Prescott Core2 Penryn Nehalem Sandybridge"

[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# Reruns the tests labelled `numerics` (every test whose result depends on how BLAS rounds) under
# one OpenBLAS kernel of each group of kernels that round alike, so that a bound fitted to one
# kernel's rounding fails here, on the developer's machine, and not on a user's.
#
#   scripts/numerics-check.sh [BUILD_DIR]            (default: build, already built)
#   scripts/numerics-check.sh --survey [BUILD_DIR]   find the groups on this CPU again
#
# The groups. --survey trains gpt-tiny for three steps under every core type this CPU executes
# (gradsync-model-bench, one BLAS thread) and groups the core types by the digest of the trained
# parameters: equal digests, equal rounding in every sgemm of every step; the digests repeat from
# run to run. On an AMD EPYC with AVX-512 and AVX512-BF16 (2026-11-29; its own kernel: Cooperlake)
# seven groups came out, where the golden test's values had suggested three: only Penryn and
# Nehalem, and Haswell and Zen, round alike bit for bit. The table:
#   sse3         Prescott
#   ssse3        Core2
#   sse4         Penryn Nehalem
#   avx          Sandybridge
#   avx2         Haswell Zen
#   avx512       SkylakeX
#   avx512-bf16  Cooperlake
#   amx          SapphireRapids (not surveyed: no machine here has AMX; a group of its own until one
#                is, so that it runs wherever the CPU executes it)
# A check runs each group the CPU executes once, by the first core type of the row that this CPU
# can execute, except that the CPU's native kernel (the one OpenBLAS picks unforced) stands for
# its own group. Each pass first checks that OpenBLAS really runs the forced kernel (it falls back
# to its own choice, silently, for a name this build does not know) and skips that name if not.
set -euo pipefail

survey=0
if [ "${1:-}" = "--survey" ]; then survey=1; shift; fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="${1:-$repo/build}"
probe="$build_dir/tests/nn_golden_test"
[ -x "$probe" ] || { echo "numerics-check: $probe not built; run make build first" >&2; exit 2; }

groups=(
  "sse3|Prescott"
  "ssse3|Core2"
  "sse4|Penryn Nehalem"
  "avx|Sandybridge"
  "avx2|Haswell Zen"
  "avx512|SkylakeX"
  "avx512-bf16|Cooperlake"
  "amx|SapphireRapids"
)

mapfile -t cores < <(bash "$repo/scripts/openblas-coretypes.sh")
if [ ${#cores[@]} -eq 0 ]; then
  echo "numerics-check: no forced OpenBLAS core types on this machine; the default run of make test stands"
  exit 0
fi

# The kernel OpenBLAS runs when told `$1` (nothing: its own choice), as its start-up line names it.
core_in_use() {
  local env=(OPENBLAS_VERBOSE=2)
  [ -n "$1" ] && env+=(OPENBLAS_CORETYPE="$1")
  env "${env[@]}" "$probe" --gtest_list_tests 2>&1 | sed -n 's/^Core: *//p' | head -n 1
}

executable() { printf '%s\n' "${cores[@]}" | grep -qix "$1"; }

if [ "$survey" -eq 1 ]; then
  bench="$build_dir/bin/gradsync-model-bench"
  [ -x "$bench" ] || { echo "numerics-check: $bench not built" >&2; exit 2; }
  declare -A members
  for core in "${cores[@]}"; do
    used="$(core_in_use "$core")"
    if [ "${used,,}" != "${core,,}" ]; then echo "numerics-check: $core: OpenBLAS runs '${used:-unknown}'"; continue; fi
    digest="$(OPENBLAS_CORETYPE="$core" "$bench" --preset gpt-tiny --batch 2 --steps 3 --warmup 0 --threads 1 \
      | sed -n 's/^parameters //p')"
    echo "numerics-check: $core $digest"
    members[$digest]="${members[$digest]:-} $core"
  done
  echo "numerics-check: core types that round alike on this CPU:"
  for digest in "${!members[@]}"; do echo " ${members[$digest]}"; done
  exit 0
fi

native="$(core_in_use "")"
chosen=()
for row in "${groups[@]}"; do
  group="${row%%|*}" pick=""
  for core in ${row#*|}; do
    executable "$core" || continue
    [ -z "$pick" ] && pick="$core"
    [ "${core,,}" = "${native,,}" ] && pick="$core"
  done
  if [ -n "$pick" ]; then chosen+=("$pick"); else echo "numerics-check: group $group: not executable on this CPU"; fi
done
echo "numerics-check: OpenBLAS's own choice here is ${native:-unknown}; one kernel of each group: ${chosen[*]}"

failed=()
ran=()
for core in "${chosen[@]}"; do
  used="$(core_in_use "$core")"
  if [ "${used,,}" != "${core,,}" ]; then
    echo "numerics-check: skipping $core (this OpenBLAS runs '${used:-unknown}' for it)"
    continue
  fi
  echo "numerics-check: OPENBLAS_CORETYPE=$core"
  if (cd "$build_dir" && OPENBLAS_CORETYPE="$core" ctest -L numerics --output-on-failure -j "$(nproc)" --timeout 600 \
        > "numerics-$core.log" 2>&1); then
    grep -E "tests passed" "$build_dir/numerics-$core.log" | sed "s/^/  /"
    ran+=("$core")
  else
    sed -n '/The following tests FAILED/,$p' "$build_dir/numerics-$core.log"
    grep -B2 -A12 -E "Failure|FAILED  \]" "$build_dir/numerics-$core.log" | head -n 80
    failed+=("$core")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "numerics-check: FAILED under ${failed[*]} (logs: $build_dir/numerics-<core>.log)" >&2
  exit 1
fi
echo "numerics-check: the numerics tests pass under ${ran[*]}"

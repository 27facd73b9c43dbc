#!/usr/bin/env bash
# Reruns the tests labelled `numerics` (every test whose result depends on how BLAS rounds) once
# under each OpenBLAS core type this CPU can execute, so that a bound fitted to one kernel's
# rounding fails here, on the developer's machine, and not on a user's.
#
#   scripts/numerics-check.sh [BUILD_DIR]       (default: build, already built)
#
# Each pass first checks that OpenBLAS really runs the forced kernel (it falls back to its own
# choice, silently, for a name this build does not know) and skips that name if not.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="${1:-$repo/build}"
probe="$build_dir/tests/nn_golden_test"
[ -x "$probe" ] || { echo "numerics-check: $probe not built; run make build first" >&2; exit 2; }

mapfile -t cores < <(bash "$repo/scripts/openblas-coretypes.sh")
if [ ${#cores[@]} -eq 0 ]; then
  echo "numerics-check: no forced OpenBLAS core types on this machine; the default run of make test stands"
  exit 0
fi

# The kernel OpenBLAS picks when told `$1`, as its verbose start-up line names it.
core_in_use() {
  OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE="$1" "$probe" --gtest_list_tests 2>&1 \
    | sed -n 's/^Core: *//p' | head -n 1
}

failed=()
ran=()
for core in "${cores[@]}"; do
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

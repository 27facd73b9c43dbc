#!/usr/bin/env bash
# CI's own scripts (.ci/): slowest-tests.sh over ctest output written here, slowest first, every
# outcome; unrun-tests.sh against a CTest project of three tests made here, failing while a test
# with neither a host label nor a run in the chroot's log exists, passing once it ran.
set -euo pipefail
repo="${1:?usage: ci_scripts_test.sh REPO}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$work/chroot.log" <<'LOG'
Test project /src/build
      Start  1: core.Fast
  1/4 Test   #1: core.Fast ................................   Passed    0.12 sec
  2/4 Test  #12: integration.Slow .........................***Failed   61.50 sec
  3/4 Test #300: cluster.rank-killed ......................***Skipped   0.01 sec
  4/4 Test   #4: numerics.Mid .............................   Passed    7.25 sec
100% tests passed, 0 tests failed out of 4
LOG
printf '  1/1 Test   #9: cluster.images ...........   Passed  342.00 sec\n' > "$work/host.log"
out="$(bash "$repo/.ci/slowest-tests.sh" 3 "fresh=$work/chroot.log" "host=$work/host.log" "absent=$work/none.log")"
[ "$(echo "$out" | wc -l)" -eq 3 ] || fail "slowest-tests printed $(echo "$out" | wc -l) lines, not 3: $out"
echo "$out" | sed -n 1p | grep -q "342.0 s  Passed   cluster.images  (host)" || fail "first line: $out"
echo "$out" | sed -n 2p | grep -q "61.5 s  Failed   integration.Slow  (fresh)" || fail "second line: $out"
echo "$out" | sed -n 3p | grep -q "7.2 s  Passed   numerics.Mid  (fresh)" || fail "third line: $out"

# A log longer than a pipe's buffer: the script still ends with status 0 under pipefail.
for i in $(seq 1 3000); do
  printf '%4d/3000 Test #%d: suite.Case%d ..........................................   Passed    %d.01 sec\n' "$i" "$i" "$i" "$i"
done > "$work/long.log"
out="$(set -o pipefail; bash "$repo/.ci/slowest-tests.sh" 2 "long=$work/long.log")" \
  || fail "slowest-tests failed on a long log (status $?)"
[ "$out" = "$(printf '  3000.0 s  Passed   suite.Case3000  (long)\n  2999.0 s  Passed   suite.Case2999  (long)')" ] \
  || fail "slowest-tests on a long log: $out"

# A CTest project: `unit` ran in the chroot, `gpu` carries the host's label, `emulated` neither.
mkdir -p "$work/build"
cat > "$work/build/CTestTestfile.cmake" <<'CTEST'
add_test(unit.a "true")
set_tests_properties(unit.a PROPERTIES LABELS "unit")
add_test(gpu.b "true")
set_tests_properties(gpu.b PROPERTIES LABELS "unit;cuda")
add_test(emulated.c "true")
set_tests_properties(emulated.c PROPERTIES LABELS "emulated")
CTEST
printf '  1/1 Test   #1: unit.a ......   Passed    0.01 sec\n' > "$work/ran.log"
if out="$(bash "$repo/.ci/unrun-tests.sh" "$work/ran.log" "$work/build" "cuda|cluster")"; then
  fail "unrun-tests passed although emulated.c ran nowhere: $out"
fi
echo "$out" | grep -qx "  emulated.c" || fail "unrun-tests did not name emulated.c: $out"
echo "$out" | grep -q "gpu.b\|unit.a" && fail "unrun-tests named a test that ran: $out"
printf '  2/2 Test   #3: emulated.c ......   Passed    0.01 sec\n' >> "$work/ran.log"
out="$(bash "$repo/.ci/unrun-tests.sh" "$work/ran.log" "$work/build" "cuda|cluster")" \
  || fail "unrun-tests failed although every test ran: $out"
echo "$out" | grep -q "2 in the fresh machine, 1 on the host" || fail "unrun-tests' counts: $out"
echo "ci scripts: ok"

#!/usr/bin/env bash
# scripts/build-quietly.sh over a stand-in `cmake` on PATH that prints a build's progress lines
# (and compiler noise), then succeeds or fails: the progress fits one line, the log keeps every
# line, and a failure passes its exit status on with the log's end.
set -u
repo="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
cat > "$work/bin/cmake" <<'FAKE'
#!/usr/bin/env bash
echo "cmake $*" > "$FAKE_ARGS"
for p in 1 2 5 9 11 17 25 33 50 66 80 99 100; do
  printf '[%3d%%] Building CXX object src/f%d.cc.o\n' "$p" "$p"
  echo "gmake[2]: Entering directory '/build'"
done
if [ "${FAKE_FAIL:-0}" = 1 ]; then echo "f99.cc:1:1: error: the last words"; exit 3; fi
FAKE
chmod +x "$work/bin/cmake"
export PATH="$work/bin:$PATH" FAKE_ARGS="$work/args"
failures=0
check() { if ! eval "$1"; then echo "FAIL: $2"; failures=$((failures + 1)); fi; }

out="$(bash "$repo/scripts/build-quietly.sh" b 2 "$work/ok.log" gradsync gradsync-worker)"
status=$?
check '[ "$status" -eq 0 ]' "a good build exits 0, not $status"
check '[ "$(printf "%s\n" "$out" | wc -l)" -eq 1 ]' "progress fits one line: $out"
check '[[ "$out" == *" 1% 11% 25% 33% 50% 66% 80% 99% 100% done" ]]' "a step each tenth: $out"
check '[ "$(grep -c gmake "$work/ok.log")" -eq 13 ]' "the log keeps every line"
check 'grep -q -- "--build b -j 2 --target gradsync gradsync-worker" "$work/args"' "builds only the targets named"

out="$(FAKE_FAIL=1 bash "$repo/scripts/build-quietly.sh" b 2 "$work/bad.log" gradsync 2>&1)"
status=$?
check '[ "$status" -eq 3 ]' "a failed build passes its status on, not $status"
check '[[ "$out" == *"error: the last words"* ]]' "a failure shows the log's end"
check '[[ "$out" == *"$work/bad.log"* ]]' "a failure names the log"

bash "$repo/scripts/build-quietly.sh" b 2 > /dev/null 2>&1
check '[ $? -eq 2 ]' "too few arguments is a usage error"

# make demo builds its four binaries through the script, and nothing else.
recipe="$(make -n --no-print-directory -C "$repo" demo-binaries BUILD_DIR=b JOBS=2 2>/dev/null | tail -n 1)"
check '[[ "$recipe" == "bash scripts/build-quietly.sh b 2 b.demo-build.log gradsync gradsync-coordinator gradsync-metrics gradsync-worker" ]]' \
  "make demo builds the four binaries quietly: $recipe"

[ "$failures" -eq 0 ] && echo "build-quietly: all checks passed"
exit $((failures > 0))

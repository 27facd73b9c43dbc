#!/usr/bin/env bash
# scripts/gradsync-nodes.sh with a launcher that records each command and runs it here, and
# stand-ins for gradsync's binaries (--bin-dir) that record their flags and the signals they get:
# the coordinator and the metrics service start on the coordinator's host, one node agent on each
# node with the flags that reach the coordinator; cluster.env names the coordinator and the token;
# SIGTERM stops the coordinator first, then every agent, then the metrics service, and the
# script exits 0. A coordinator that never serves makes it fail, naming the host. The real
# binaries on separate hosts run in tests/cluster (the nodes-script check).
# shellcheck disable=SC2016,SC2317,SC1091 # check's conditions are evaluated later; cleanup runs on EXIT
set -u
repo="$1"
work="$(mktemp -d)"
name="test$$"
cleanup() {
  [ -n "${script_pid:-}" ] && kill -KILL "$script_pid" 2> /dev/null
  for f in /tmp/gradsync-nodes."$name".*.pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2> /dev/null; done
  rm -f /tmp/gradsync-nodes."$name".*.pid
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/bin" "$work/state"

# The launcher: `launch HOST COMMAND...` records the host and command, then runs it here.
cat > "$work/launch" << 'EOF'
#!/usr/bin/env bash
host="$1"
shift
printf '%s|%s\n' "$host" "$*" >> "$RECORD_DIR/launches"
exec "$@"
EOF
# A daemon: records its flags, and the signal that ends it, in order.
cat > "$work/bin/daemon" << 'EOF'
#!/usr/bin/env bash
me="$(basename "$0")"
printf '%s\n' "$@" > "$RECORD_DIR/$me.$$.args"
trap 'echo "$me" >> "$RECORD_DIR/terms"; exit 0' TERM
while :; do sleep 0.1; done
EOF
for d in gradsync-coordinator gradsync-metrics gradsync-worker; do ln -s daemon "$work/bin/$d"; done
# The CLI's health check: serving unless the test says otherwise.
cat > "$work/bin/gradsync" << 'EOF'
#!/usr/bin/env bash
echo "$*" >> "$RECORD_DIR/healthchecks"
[ "${FAKE_NOT_SERVING:-0}" = 0 ]
EOF
chmod +x "$work/launch" "$work/bin/daemon" "$work/bin/gradsync"
export RECORD_DIR="$work"

failures=0
check() { if ! eval "$1"; then echo "FAIL: $2"; failures=$((failures + 1)); fi; }
args_of() { cat "$work"/"$1".*.args 2> /dev/null; }  # every instance's flags, one per line

bash -n "$repo/scripts/gradsync-nodes.sh"
check '[ $? -eq 0 ]' "bash -n"

bash "$repo/scripts/gradsync-nodes.sh" --nodes node-a,node-b --launcher "$work/launch" --bin-dir "$work/bin" \
  --state-dir "$work/state" --data-root /data --name "$name" --coordinator-arg=--lease-timeout-ms=20000 \
  -- --blas-threads=2 > "$work/out" 2>&1 &
script_pid=$!
for _ in $(seq 100); do
  [ -f "$work/state/cluster.env" ] && [ "$(cat "$work"/gradsync-worker.*.args 2> /dev/null | grep -c -- '--gpus')" -eq 2 ] && break
  sleep 0.1
done
check '[ -f "$work/state/cluster.env" ]' "cluster.env written: $(cat "$work/out")"

# Where each service ran, and with what.
launches="$(cat "$work/launches")"
check '[ "$(grep -c "^node-a|sh -c .* $work/bin/gradsync-coordinator " <<< "$launches")" -eq 1 ]' \
  "one coordinator, on the first node: $launches"
check '[ "$(grep -c "^node-a|sh -c .* $work/bin/gradsync-metrics " <<< "$launches")" -eq 1 ]' \
  "one metrics service, on the first node: $launches"
check '[ "$(grep -c "^node-a|$work/bin/gradsync healthcheck 127.0.0.1:7070 " <<< "$launches")" -ge 1 ]' \
  "the coordinator's health is checked on its host: $launches"
for host in node-a node-b; do
  check '[ "$(grep -c "^$host|sh -c .* $work/bin/gradsync-worker " <<< "$launches")" -eq 1 ]' \
    "one agent on $host: $launches"
done
coordinator="$(args_of gradsync-coordinator)"
for flag in --listen=0.0.0.0:7070 --rest-listen=0.0.0.0:8080 "--auth-token-file=$work/state/tokens/auth.token" \
  "--cluster-token-file=$work/state/tokens/cluster.token" "--state-dir=$work/state/coordinator" \
  "--artifact-root=$work/state/artifacts" --data-root=/data --lease-timeout-ms=20000; do
  check 'grep -qx -- "$flag" <<< "$coordinator"' "coordinator flag $flag: $coordinator"
done
for f in "$work"/gradsync-worker.*.args; do
  agent="$(cat "$f")"
  host="$(grep -- '--name=' <<< "$agent" | cut -d= -f2)"
  check '[ "$host" = node-a ] || [ "$host" = node-b ]' "agent named after its host: $agent"
  for flag in --gpus all --coordinator=node-a:7070 --metrics=node-a:7071 "--comm-host=$host" \
    "--cluster-token-file=$work/state/tokens/cluster.token" "--metrics-token-file=$work/state/tokens/metrics.token" \
    --blas-threads=2; do
    check 'grep -qx -- "$flag" <<< "$agent"' "agent on $host lacks $flag: $agent"
  done
done
for t in auth cluster metrics; do
  check '[ "$(stat -c %a "$work/state/tokens/$t.token")" = 600 ] && [ "$(wc -c < "$work/state/tokens/$t.token")" -eq 65 ]' \
    "$t token: 32 random bytes in hex, readable by its owner alone"
done
(
  . "$work/state/cluster.env"
  [ "$GRADSYNC_ADDRESS" = node-a:7070 ] && [ "$GRADSYNC_TOKEN_FILE" = "$work/state/tokens/auth.token" ]
)
check '[ $? -eq 0 ]' "cluster.env: $(cat "$work/state/cluster.env")"

# SIGTERM: the coordinator first, then the agents, then the metrics service; exit 0.
kill -TERM "$script_pid"
wait "$script_pid"
status=$?
script_pid=""
check '[ "$status" -eq 0 ]' "exit status $status after SIGTERM: $(cat "$work/out")"
terms="$(tr '\n' ' ' < "$work/terms")"
check '[ "$terms" = "gradsync-coordinator gradsync-worker gradsync-worker gradsync-metrics " ]' \
  "stopped in order coordinator, agents, metrics: $terms"
check '[ ! -f "$work/state/cluster.env" ]' "cluster.env removed once stopped"
check '! ls /tmp/gradsync-nodes."$name".*.pid > /dev/null 2>&1' "pid files removed"

# A coordinator that never serves: the script gives up, names the host, stops what it started.
rm -f "$work"/*.args "$work/terms" "$work/launches"
out="$(FAKE_NOT_SERVING=1 timeout 120 bash "$repo/scripts/gradsync-nodes.sh" --nodes node-x --launcher "$work/launch" \
  --bin-dir "$work/bin" --state-dir "$work/state" --name "$name" --no-metrics --start-timeout 2 2>&1)"
status=$?
check '[ "$status" -eq 1 ]' "a coordinator that never serves: exit $status"
check '[[ "$out" == *"the coordinator on node-x is not serving"* ]]' "names the host: $out"
check '! grep -q gradsync-worker "$work/launches"' "no agent started without a coordinator"
check '[ "$(cat "$work/terms")" = gradsync-coordinator ]' "the coordinator stopped: $(cat "$work/terms" 2> /dev/null)"

# Bad options are refused naming them.
out="$(bash "$repo/scripts/gradsync-nodes.sh" --nodes a --cpu-workers two 2>&1)"
check '[ $? -eq 2 ] && [[ "$out" == *"--cpu-workers two"* ]]' "--cpu-workers two: $out"
out="$(env -u SLURM_JOB_NODELIST bash "$repo/scripts/gradsync-nodes.sh" 2>&1)"
check '[ $? -eq 2 ] && [[ "$out" == *"--nodes"* ]]' "no nodes outside Slurm: $out"

[ "$failures" -eq 0 ] && echo "gradsync-nodes: all checks passed"
exit $((failures > 0))

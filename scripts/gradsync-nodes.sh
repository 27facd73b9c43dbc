#!/usr/bin/env bash
# gradsync on bare-metal nodes or in a Slurm allocation: the coordinator (and the metrics
# service) on one node, the node agent (`gradsync-worker --gpus all`, a worker per GPU) on each
# node of a list, every one started through a launcher: srun inside a Slurm job, ssh for a host
# list, or any command that runs a command on a named host (`docker exec` in the cluster checks).
# Two modes:
#   - a cluster (the default): runs in the foreground until it gets SIGTERM or SIGINT (scancel,
#     the job's time limit, Ctrl-C) or one of the services ends; jobs come from outside
#     (`. STATE_DIR/cluster.env && gradsync submit job.yaml`).
#   - one run (--run SPEC): submits SPEC from this host once the agents are up, follows it, and
#     ends with it: exit 0 when it SUCCEEDED, 1 when it FAILED or was cancelled, 143 when a signal
#     stopped it (after its checkpoint). Started again with the same state directory while that
#     job has not ended (a preempted, cancelled or timed-out allocation), it follows the same job,
#     which resumes from its last checkpoint, instead of submitting another; the job as it ended
#     (`gradsync get -o json`) stays in STATE_DIR/run-result.json. A node agent that
#     ends (its node died) does not end the run: the job restarts on the nodes left.
# Either way it then stops them all: the coordinator first (it checkpoints running jobs), then the
# agents (each stops its workers at a step boundary, after a checkpoint), then the metrics service.
#
#   gradsync-nodes.sh [options] [-- FLAG...]      FLAGs go to every node agent
#
# Options:
#   --nodes LIST          hosts to run an agent on: a comma-separated list, or @FILE with one per
#                         line. Default: the nodes of the Slurm job (SLURM_JOB_NODELIST).
#   --coordinator-host H  where the coordinator and the metrics service run. Default: the first node.
#   --launcher CMD        srun (the default inside a Slurm job), ssh (the default outside one), or a
#                         command run as `CMD HOST COMMAND...`, e.g. "docker exec" or "srun --gres=gpu:8
#                         --nodes=1 --ntasks=1 --overlap --nodelist".
#   --state-dir DIR       a directory every node sees at the same path (a shared file system): the
#                         tokens (made if missing), the coordinator's database, the jobs' checkpoints
#                         and weights, the logs and cluster.env. Default: ./gradsync-state.
#   --data-root DIR       where job data must lie (the coordinator's --data-root). Default: the
#                         current directory.
#   --gpus SEL            each agent's --gpus: all (the default), N, or a list such as 0,1,2,3.
#   --cpu-workers N       N CPU workers per node (--workers N) instead of GPUs.
#   --bin-dir DIR         the directory of gradsync's binaries on the nodes. Default: PATH there.
#   --port P              the coordinator's gRPC port (7070); its REST port is --rest-port (8080).
#   --coordinator-arg A   one more coordinator flag (repeatable), e.g. --lease-timeout-ms=20000.
#   --no-metrics          no metrics service (the workers report nowhere).
#   --start-timeout S     how long the coordinator may take to serve (60 s).
#   --name NAME           names this cluster's pid files on the nodes (/tmp/gradsync-nodes.NAME.*).
#   --run SPEC            one run: submit the job spec SPEC (a file on this host), follow it, end with it.
#   --submit-arg A        one more `gradsync submit` argument for --run (repeatable), e.g.
#                         --submit-arg=--set --submit-arg=training.worldSize=16.
#
# Then, from a login node: `. STATE_DIR/cluster.env && gradsync submit job.yaml`.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-2}"; }
die() { echo "gradsync-nodes: $*" >&2; exit 2; }

nodes="" coordinator_host="" launcher="" state_dir="$PWD/gradsync-state" data_root="$PWD"
gpus="all" cpu_workers="" bin_dir="" port=7070 rest_port=8080 metrics=1 name="gradsync" start_timeout=60
coordinator_args=() agent_flags=() run_spec="" submit_args=()
while [ $# -gt 0 ]; do
  case "$1" in --?*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;; esac  # --option=value
  case "$1" in
    --nodes) nodes="${2:?--nodes needs a value}"; shift 2 ;;
    --coordinator-host) coordinator_host="${2:?--coordinator-host needs a host}"; shift 2 ;;
    --launcher) launcher="${2:?--launcher needs a command}"; shift 2 ;;
    --state-dir) state_dir="${2:?--state-dir needs a directory}"; shift 2 ;;
    --data-root) data_root="${2:?--data-root needs a directory}"; shift 2 ;;
    --gpus) gpus="${2:?--gpus needs all, N or a list}"; shift 2 ;;
    --cpu-workers) cpu_workers="${2:?--cpu-workers needs a count}"; shift 2 ;;
    --bin-dir) bin_dir="${2:?--bin-dir needs a directory}"; shift 2 ;;
    --port) port="${2:?--port needs a port}"; shift 2 ;;
    --rest-port) rest_port="${2:?--rest-port needs a port}"; shift 2 ;;
    --coordinator-arg) coordinator_args+=("${2:?--coordinator-arg needs a flag}"); shift 2 ;;
    --no-metrics) metrics=0; shift ;;
    --name) name="${2:?--name needs a name}"; shift 2 ;;
    --start-timeout) start_timeout="${2:?--start-timeout needs seconds}"; shift 2 ;;
    --run) run_spec="${2:?--run needs a job spec}"; shift 2 ;;
    --submit-arg) submit_args+=("${2?--submit-arg needs an argument}"); shift 2 ;;
    -h | --help) usage 0 ;;
    --) shift; agent_flags=("$@"); break ;;
    *) die "unknown option $1 (--help lists them)" ;;
  esac
done
[[ "$name" =~ ^[A-Za-z0-9_.-]+$ ]] || die "--name $name: use letters, digits, '.', '_' and '-'"
[ -z "$cpu_workers" ] || [[ "$cpu_workers" =~ ^[1-9][0-9]*$ ]] || die "--cpu-workers $cpu_workers: expected a count"
[[ "$port" =~ ^[0-9]+$ && "$rest_port" =~ ^[0-9]+$ ]] || die "--port and --rest-port take port numbers"
[[ "$start_timeout" =~ ^[1-9][0-9]*$ ]] || die "--start-timeout $start_timeout: expected seconds"
[ -z "$run_spec" ] || [ -r "$run_spec" ] || die "--run $run_spec: cannot read the job spec"
[ "${#submit_args[@]}" -eq 0 ] || [ -n "$run_spec" ] || die "--submit-arg is for --run"

# ---- the nodes and the launcher -------------------------------------------------------------
if [ -z "$nodes" ]; then
  [ -n "${SLURM_JOB_NODELIST:-}" ] || die "--nodes: give a host list (or run inside a Slurm job)"
  nodes="$(scontrol show hostnames "$SLURM_JOB_NODELIST")" || die "scontrol cannot expand SLURM_JOB_NODELIST"
elif [ "${nodes:0:1}" = "@" ]; then
  nodes="$(grep -v '^[[:space:]]*\(#\|$\)' "${nodes:1}")" || die "--nodes ${nodes}: cannot read the file"
fi
read -r -d '' -a hosts < <(printf '%s\n' "$nodes" | tr ',' '\n' | sed 's/[[:space:]]//g; /^$/d')
[ "${#hosts[@]}" -gt 0 ] || die "--nodes: no host given"
coordinator_host="${coordinator_host:-${hosts[0]}}"
if [ -z "$launcher" ]; then launcher=$([ -n "${SLURM_JOB_ID:-}" ] && echo srun || echo ssh); fi
case "$launcher" in
  srun) launch_prefix=(srun --nodes=1 --ntasks=1 --overlap --kill-on-bad-exit=0 --nodelist) ;;
  ssh) launch_prefix=(ssh -o BatchMode=yes) ;;
  *) read -r -a launch_prefix <<< "$launcher" ;;
esac
via_ssh=0
[ "$(basename "${launch_prefix[0]}")" = ssh ] && via_ssh=1
via_srun=0
[ "$(basename "${launch_prefix[0]}")" = srun ] && via_srun=1

# on HOST COMMAND...: runs COMMAND on HOST through the launcher. ssh hands the remote shell one
# string, so the words are quoted for it; the other launchers pass them on as they are.
on() {
  local host="$1"
  shift
  if [ "$via_ssh" = 1 ]; then
    "${launch_prefix[@]}" "$host" "$(printf '%q ' "$@")"
  else
    "${launch_prefix[@]}" "$host" "$@"
  fi
}
bin() { if [ -n "$bin_dir" ]; then echo "$bin_dir/$1"; else echo "$1"; fi; }
pidfile() { echo "/tmp/gradsync-nodes.$name.$1.$2.pid"; }  # host, role

# ---- tokens and the state directory ---------------------------------------------------------
mkdir -p "$state_dir/logs" "$state_dir/tokens" || die "--state-dir $state_dir: cannot create it"
state_dir="$(cd "$state_dir" && pwd)"
tokens="$state_dir/tokens"
for t in auth cluster metrics; do
  if [ ! -s "$tokens/$t.token" ]; then
    (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$tokens/$t.token" && echo >> "$tokens/$t.token") ||
      die "cannot write $tokens/$t.token"
  fi
done

# ---- starting and stopping --------------------------------------------------------------------
declare -A launched=()  # role@host -> pid of the local launcher process
start() {  # start ROLE HOST COMMAND...: in the background, its output in logs/ROLE-HOST.log
  local role="$1" host="$2"
  shift 2
  local log="$state_dir/logs/$role-$host.log"
  echo "gradsync-nodes: starting $role on $host (log $log)"
  # The remote shell writes its pid where `stop` finds it, then becomes the service.
  # shellcheck disable=SC2016 # expanded by the shell on the node
  on "$host" sh -c 'echo $$ > "$1" && shift && exec "$@"' gradsync-nodes "$(pidfile "$host" "$role")" "$@" \
    >> "$log" 2>&1 < /dev/null &
  launched["$role@$host"]=$!
}

stop() {  # stop ROLE GRACE_S: SIGTERM to every ROLE, then wait up to GRACE_S for their launchers
  local role="$1" grace="$2" key pids=()
  for key in "${!launched[@]}"; do
    [ "${key%@*}" = "$role" ] || continue
    local host="${key#*@}" pid="${launched[$key]}"
    kill -0 "$pid" 2> /dev/null || continue
    echo "gradsync-nodes: stopping $role on $host"
    if [ "$via_srun" = 1 ]; then
      kill -TERM "$pid"  # srun passes the signal on to its task
    else
      # shellcheck disable=SC2016 # expanded by the shell on the node
      on "$host" sh -c 'kill -TERM "$(cat "$1")" 2> /dev/null; rm -f "$1"' gradsync-nodes "$(pidfile "$host" "$role")" \
        < /dev/null
    fi
    pids+=("$pid")
  done
  local deadline=$((SECONDS + grace)) pid
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2> /dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
    kill -KILL "$pid" 2> /dev/null
  done
}

stopping=0
watch_pid=""
stop_all() {
  [ "$stopping" = 1 ] && return
  stopping=1
  trap '' TERM INT
  [ -z "$watch_pid" ] || kill -TERM "$watch_pid" 2> /dev/null
  stop coordinator 40
  stop agent 45
  stop metrics 10
  wait 2> /dev/null
  rm -f "$state_dir/cluster.env"
  echo "gradsync-nodes: stopped"
}
# A signal ends a cluster as asked (0), and a run before its end (143: sbatch it again to resume).
signalled_status=0
[ -z "$run_spec" ] || signalled_status=143
trap 'stop_all; exit "$signalled_status"' TERM INT

# ---- the services -----------------------------------------------------------------------------
address="$coordinator_host:$port"
# The agents stop with the coordinator, so no worker of an earlier start can come back to claim its
# rank: a job left running resumes from its last checkpoint at once instead of awaiting them.
start coordinator "$coordinator_host" "$(bin gradsync-coordinator)" --adopt-grace-ms=0 \
  "--listen=0.0.0.0:$port" "--rest-listen=0.0.0.0:$rest_port" --metrics-listen=0.0.0.0:9465 \
  "--auth-token-file=$tokens/auth.token" "--cluster-token-file=$tokens/cluster.token" \
  "--metrics-token-file=$tokens/metrics.token" "--state-dir=$state_dir/coordinator" \
  "--artifact-root=$state_dir/artifacts" "--data-root=$data_root" "${coordinator_args[@]}"
metrics_flag=()
if [ "$metrics" = 1 ]; then
  start metrics "$coordinator_host" "$(bin gradsync-metrics)" --listen=0.0.0.0:7071 --http-listen=0.0.0.0:9464 \
    --api-listen=0.0.0.0:9466 "--cluster-token-file=$tokens/cluster.token" "--metrics-token-file=$tokens/metrics.token"
  metrics_flag=("--metrics=$coordinator_host:7071")
fi

# The coordinator answers its health check on its own host before any agent dials it.
ready=0
deadline=$((SECONDS + start_timeout))
while [ "$SECONDS" -lt "$deadline" ]; do
  if on "$coordinator_host" "$(bin gradsync)" healthcheck "127.0.0.1:$port" --timeout 2 < /dev/null > /dev/null 2>&1; then
    ready=1
    break
  fi
  kill -0 "${launched[coordinator@$coordinator_host]}" 2> /dev/null || break
  sleep 1
done
if [ "$ready" != 1 ]; then
  echo "gradsync-nodes: the coordinator on $coordinator_host is not serving; its log ends:" >&2
  tail -n 20 "$state_dir/logs/coordinator-$coordinator_host.log" >&2
  stop_all
  exit 1
fi

selection=(--gpus "$gpus")
[ -n "$cpu_workers" ] && selection=(--workers "$cpu_workers")
for host in "${hosts[@]}"; do
  start agent "$host" "$(bin gradsync-worker)" "${selection[@]}" "--coordinator=$address" "${metrics_flag[@]}" \
    "--comm-host=$host" "--name=$host" "--cluster-token-file=$tokens/cluster.token" \
    "--metrics-token-file=$tokens/metrics.token" "${agent_flags[@]}"
done

# What clients need: `. cluster.env && gradsync submit job.yaml`.
printf 'export GRADSYNC_ADDRESS=%q\nexport GRADSYNC_TOKEN_FILE=%q\n' "$address" "$tokens/auth.token" \
  > "$state_dir/cluster.env.tmp" && mv "$state_dir/cluster.env.tmp" "$state_dir/cluster.env"
echo "gradsync-nodes: coordinator at $address, ${#hosts[@]} node agents; clients: . $state_dir/cluster.env"

if [ -z "$run_spec" ]; then
  # Until a signal, or until one service ends (then the rest are stopped too).
  wait -n
  status=$?
  stop_all
  echo "gradsync-nodes: a service ended (status $status); see $state_dir/logs" >&2
  exit 1
fi

# ---- one run ----------------------------------------------------------------------------------
cli() { "$(bin gradsync)" "$@" --address "$address" --token-file "$tokens/auth.token"; }
record="$state_dir/run.job"
job=""
if [ -s "$record" ]; then
  previous="$(cat "$record")"
  # The job's own state: the first "state" of its JSON (the spec before it has none).
  state="$(cli get "$previous" -o json 2> /dev/null | grep -o '"state": *"[A-Z_]*"' | head -n 1 | tr -dc 'A-Z_' || true)"
  case "$state" in
    "" | SUCCEEDED | FAILED | CANCELLED) ;;
    *) job="$previous"; echo "gradsync-nodes: following $job ($state), submitted by an earlier run with this state directory" ;;
  esac
fi
if [ -z "$job" ]; then
  if ! job="$(cli submit "$run_spec" "${submit_args[@]}" -o name)"; then
    echo "gradsync-nodes: gradsync submit $run_spec was refused" >&2
    stop_all
    exit 2
  fi
  printf '%s\n' "$job" > "$record.tmp" && mv "$record.tmp" "$record"
  echo "gradsync-nodes: submitted $job"
fi
cli watch "$job" < /dev/null &
watch_pid=$!
# Until the job ends (watch returns its verdict), a signal, or the coordinator's end. A sleep in
# the background keeps the traps prompt.
agents_seen_down=()
while kill -0 "$watch_pid" 2> /dev/null; do
  sleep 1 &
  wait $! 2> /dev/null
  if ! kill -0 "${launched[coordinator@$coordinator_host]}" 2> /dev/null; then
    echo "gradsync-nodes: the coordinator ended during the run; see $state_dir/logs" >&2
    stop_all
    exit 1
  fi
  for host in "${hosts[@]}"; do
    if ! kill -0 "${launched[agent@$host]}" 2> /dev/null && [[ " ${agents_seen_down[*]} " != *" $host "* ]]; then
      agents_seen_down+=("$host")
      echo "gradsync-nodes: the agent on $host ended; the run goes on with the nodes left" >&2
    fi
  done
done
wait "$watch_pid"
status=$?
watch_pid=""
echo "gradsync-nodes: $job ended (gradsync watch exit $status)"
# The job as it ended, for after the coordinator has stopped: its result, events and checkpoints.
cli get "$job" -o json > "$state_dir/run-result.json.tmp" 2> /dev/null && mv "$state_dir/run-result.json.tmp" "$state_dir/run-result.json"
stop_all
exit "$status"

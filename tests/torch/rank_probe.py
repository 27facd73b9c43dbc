"""A script job's rank, instrumented: records what it was started with, then behaves as told.

Each start writes OUT/rank<R>-restart<C>.json (its environment, pid, process group, working
directory, and a grandchild's pid with --grandchild) before doing what the options ask: hold (sleep
until stopped), fail, ignore SIGTERM. Plain Python: no torch, so that it starts in milliseconds.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

VARIABLES = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
             "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
             "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "OMP_NUM_THREADS",
             "PROBE_EXTRA"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--hold-rank", type=int, default=-1, help="this rank sleeps until stopped (first start only)")
    p.add_argument("--hold-always", action="store_true", help="every rank sleeps until stopped, at every start")
    p.add_argument("--fail-rank", type=int, default=-1, help="this rank exits 1 ...")
    p.add_argument("--fail-until-restart", type=int, default=1, help="... while the restart count is below this")
    p.add_argument("--ignore-term", action="store_true", help="ignore SIGTERM while holding")
    p.add_argument("--grandchild", action="store_true", help="start a sleeping grandchild in the same group")
    args = p.parse_args()

    rank = int(os.environ["RANK"])
    restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    record = {name: os.environ.get(name) for name in VARIABLES}
    record.update(pid=os.getpid(), pgid=os.getpgid(0), cwd=os.getcwd(), argv=sys.argv)
    if args.grandchild:
        record["grandchild"] = subprocess.Popen(["sleep", "300"]).pid
    path = os.path.join(args.out, f"rank{rank}-restart{restart}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.rename(path + ".tmp", path)
    print(f"rank {rank} started, restart {restart}", flush=True)
    print(f"rank {rank} says this on stderr", file=sys.stderr, flush=True)

    if args.fail_rank == rank and restart < args.fail_until_restart:
        print(f"rank {rank} fails on purpose", file=sys.stderr, flush=True)
        sys.exit(1)
    if args.hold_always or (args.hold_rank == rank and restart == 0):
        while True:
            time.sleep(0.1)
    # While a rank is to fail, the others wait: its failure must stop them mid-run.
    time.sleep(30 if args.fail_rank >= 0 and restart < args.fail_until_restart else 0.5)


if __name__ == "__main__":
    main()

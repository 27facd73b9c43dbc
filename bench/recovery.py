#!/usr/bin/env python3
"""What a lost worker costs: live recovery against the restart from a checkpoint (docs/recovery.md).

A local cluster of real processes: a coordinator (1.5 s lease, 300 ms heartbeats) and workers, a
4-rank mlp job that would run for ever. Three figures, each printed as a table:

  kills     kill -9 a rank's worker mid-run N times (a fresh worker is started as the spare each
            time) and report, per failure, the seconds from the kill to the job's Recovered event
            (its next generation's first committed step) and the committed steps lost; median and
            worst, for training.recovery live and checkpoint (checkpoint.everySteps 100) alike.
  faults    kill a rank's worker every N seconds for D seconds (the worker coming back as a spare)
            and report the steps committed over the steps a fault-free run commits in the same
            time: torchft's efficiency figure.
  overhead  a fault-free run with recovery live and with checkpoint, alternating, and their steps
            per second: what live recovery adds to a healthy step.

  bench/recovery.py kills [--build build] [--count 20]
  bench/recovery.py faults [--every 15] [--duration 120]
  bench/recovery.py overhead [--runs 3] [--duration 40]
"""
import argparse
import datetime
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

JOB = [
    "training.worldSize=4", "training.epochs=0", "training.maxSteps=100000000", "training.maxRestarts=1000",
    "model.mlp.hiddenDims=[1024,1024]", "training.microBatch=16", "data.synthetic.numSamples=100000",
    "training.logEvery=5",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A coordinator and workers on loopback, each a process of the build's binaries."""

    def __init__(self, build, workers):
        self.build = os.path.abspath(build)
        self.dir = tempfile.mkdtemp(prefix="gradsync-recovery-bench-")
        self.address = f"127.0.0.1:{free_port()}"
        self.procs = []
        self.workers = {}
        self.coordinator = self.start(
            "gradsync-coordinator", f"--listen={self.address}", f"--rest-listen=127.0.0.1:{free_port()}",
            f"--metrics-listen=127.0.0.1:{free_port()}", f"--state-dir={self.dir}/state",
            "--heartbeat_interval_ms=300", "--lease_timeout_ms=1500", log="coordinator")
        for _ in range(workers):
            self.add_worker()
        self.cli("healthcheck", self.address, "--timeout", "20")

    def start(self, binary, *args, log):
        out = open(os.path.join(self.dir, log + ".log"), "ab")
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        p = subprocess.Popen([os.path.join(self.build, "bin", binary), *args], stdout=out, stderr=out, env=env)
        self.procs.append(p)
        return p

    def add_worker(self):
        name = f"w{len(self.workers)}"
        p = self.start("gradsync-worker", f"--coordinator={self.address}", f"--name={name}",
                       f"--metrics-listen=127.0.0.1:{free_port()}", f"--health-listen=127.0.0.1:{free_port()}",
                       log=name)
        self.workers[p.pid] = p
        return p

    def cli(self, *args):
        r = subprocess.run([os.path.join(self.build, "bin", "gradsync"), *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"gradsync {' '.join(args)}: {r.stderr}")
        return r.stdout

    def submit(self, sets):
        argv = ["submit", os.path.join(os.path.dirname(__file__), "..", "examples", "jobs", "mlp.yaml"),
                "--address", self.address]
        for s in JOB + sets:
            argv += ["--set", s]
        return self.cli(*argv).splitlines()[0]

    def job(self, job):
        return json.loads(self.cli("get", job, "-o", "json", "--address", self.address))

    def rank_holders(self, job):
        """The pids of the workers that hold ranks of the job's running generation."""
        listing = json.loads(self.cli("workers", "-o", "json", "--address", self.address))
        workers = listing.get("items", listing.get("workers", [])) if isinstance(listing, dict) else listing
        return [int(w["pid"]) for w in workers
                if w.get("state") == "WORKER_BUSY" and w.get("jobId") == job.split("/")[-1]]

    def kill(self, pid):
        os.kill(pid, signal.SIGKILL)
        self.workers.pop(pid).wait()

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def step_of(job):
    return int(job.get("progress", {}).get("step", 0))


def event_times(job, kind):
    out = []
    for e in job.get("events", []):
        if e.get("type") == kind:
            t = e["time"].rstrip("Z")
            t = t[:26] if "." in t else t
            out.append(datetime.datetime.fromisoformat(t).replace(tzinfo=datetime.timezone.utc).timestamp())
    return out


def wait(predicate, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise RuntimeError("timed out")


def kills(args):
    rows = {}
    for mode in args.modes.split(","):
        cluster = Cluster(args.build, 5)
        try:
            job = cluster.submit([f"training.recovery={mode}", "checkpoint.everySteps=100"])
            seconds, lost, regained = [], [], []
            for n in range(args.count):
                before = cluster.job(job)
                done = len(event_times(before, "Recovered"))
                lost_before = int(before.get("recovery", {}).get("stepsLost", 0))
                # Mid-run, at a random point between checkpoints.
                at = step_of(before) + random.randint(20, 120)
                wait(lambda: step_of(cluster.job(job)) >= at and cluster.job(job)["state"] == "RUNNING", 120)
                victim = random.choice(cluster.rank_holders(job))
                killed_step = step_of(cluster.job(job))
                killed_at = time.time()
                cluster.kill(victim)
                cluster.add_worker()
                try:
                    after = wait(lambda: (lambda j: j if len(event_times(j, "Recovered")) > done else None)(
                        cluster.job(job)), 120)
                except RuntimeError:
                    raise RuntimeError(f"no recovery within 120 s: {json.dumps(cluster.job(job)['events'][-6:])}")
                seconds.append(event_times(after, "Recovered")[-1] - killed_at)
                lost.append(int(after.get("recovery", {}).get("stepsLost", 0)) - lost_before)
                # What the failure cost in time: until the job is back at the step it had reached.
                wait(lambda: step_of(cluster.job(job)) >= killed_step, 300)
                regained.append(time.time() - killed_at)
                print(f"{mode} kill {n + 1} at step {killed_step}: {seconds[-1]:.2f} s to the next committed step, "
                      f"{lost[-1]} steps lost, {regained[-1]:.2f} s to be back at step {killed_step}", file=sys.stderr)
            rows[mode] = (seconds, lost, regained)
        finally:
            cluster.close()
    print("| recovery | kills | s to the next committed step, median / worst | committed steps lost, median / worst "
          "| s until back at the step of the kill, median / worst |")
    print("| --- | --- | --- | --- | --- |")
    for mode, (seconds, lost, regained) in rows.items():
        print(f"| {mode} | {len(seconds)} | {statistics.median(seconds):.2f} / {max(seconds):.2f} | "
              f"{statistics.median(lost):.0f} / {max(lost)} | {statistics.median(regained):.2f} / {max(regained):.2f} |")


def committed_in(cluster, job, duration, every):
    """The steps the job commits in `duration` seconds from its first step, killing a rank's worker
    every `every` seconds (none when 0) and starting a spare for it."""
    wait(lambda: step_of(cluster.job(job)) > 0, 120)
    start, start_step = time.time(), step_of(cluster.job(job))
    next_kill = start + every if every else float("inf")
    failures = 0
    while time.time() < start + duration:
        if time.time() >= next_kill:
            holders = cluster.rank_holders(job)
            if holders:
                cluster.kill(random.choice(holders))
                cluster.add_worker()
                failures += 1
            next_kill += every
        time.sleep(0.1)
    return step_of(cluster.job(job)) - start_step, failures


def faults(args):
    results = {}
    for mode, every in (("fault-free", 0), ("live", args.every), ("checkpoint", args.every)):
        cluster = Cluster(args.build, 5)
        try:
            recovery = "checkpoint" if mode == "checkpoint" else "live"
            job = cluster.submit([f"training.recovery={recovery}", "checkpoint.everySteps=100"])
            results[mode] = committed_in(cluster, job, args.duration, every)
            print(f"{mode}: {results[mode][0]} steps, {results[mode][1]} failures", file=sys.stderr)
        finally:
            cluster.close()
    clean = results["fault-free"][0]
    print(f"| a failure every | recovery | failures | steps committed | of a fault-free run's {clean} |")
    print("| --- | --- | --- | --- | --- |")
    for mode in ("live", "checkpoint"):
        steps, failures = results[mode]
        print(f"| {args.every} s | {mode} | {failures} | {steps} | {100.0 * steps / clean:.1f}% |")


def overhead(args):
    rates = {"live": [], "checkpoint": []}
    for _ in range(args.runs):
        for mode in ("live", "checkpoint"):
            cluster = Cluster(args.build, 4)
            try:
                job = cluster.submit([f"training.recovery={mode}", "checkpoint.everySteps=0"])
                steps, _ = committed_in(cluster, job, args.duration, 0)
                rates[mode].append(steps / args.duration)
            finally:
                cluster.close()
    print("| recovery | runs | steps/s, each run | median |")
    print("| --- | --- | --- | --- |")
    for mode, r in rates.items():
        print(f"| {mode} | {len(r)} | {', '.join(f'{x:.1f}' for x in r)} | {statistics.median(r):.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("figure", choices=["kills", "faults", "overhead"])
    parser.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    parser.add_argument("--count", type=int, default=20, help="kills: failures per recovery mode")
    parser.add_argument("--every", type=float, default=15, help="faults: seconds between failures")
    parser.add_argument("--duration", type=float, default=120, help="faults, overhead: seconds of each run")
    parser.add_argument("--runs", type=int, default=3, help="overhead: runs of each mode")
    parser.add_argument("--modes", default="live,checkpoint", help="kills: the training.recovery modes to measure")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    random.seed(args.seed)
    {"kills": kills, "faults": faults, "overhead": overhead}[args.figure](args)


if __name__ == "__main__":
    main()

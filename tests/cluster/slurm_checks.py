"""The Slurm checks: gradsync on a real Slurm cluster of containers (slurm_cluster.py), driven
only through Slurm's own commands: sbatch submits, scontrol and squeue watch, scancel stops, and
faults are a node container killed and a job's time limit.

- slurm-one-run: examples/slurm/gradsync-run.sbatch, one sbatch per run: a native job and a
  PyTorch script job succeed with exit code 0; a run cancelled with scancel mid-run, then
  submitted again with the same state directory, resumes from its checkpoint and ends with the
  parameter digest of the uninterrupted run.
- slurm-faults: a node container killed mid-run (the job restarts on the nodes left, within the
  allocation), and a run reaching its time limit (--signal) commits a checkpoint before its end.
- slurm-cluster: examples/slurm/gradsync.sbatch, the long-lived cluster, started by sbatch, jobs
  submitted from the login host outside the allocation, stopped by scancel; a job it was running
  resumes in the next allocation from the checkpoint taken at scancel."""
import json
import os
import re
import shutil
import time

import slurm_cluster as sc

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(REPO, "examples", "slurm")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class SlurmCheck:
    def __init__(self, k, nodes):
        self.k = k
        self.cluster = sc.SlurmCluster(k.docker, f"gs-{k.args.check}", tag=k.args.tag, nodes=nodes)
        k.cluster = self.cluster  # for the caller's logs and tear-down
        self.cluster.up()
        log(f"Slurm is up: slurmctld, {', '.join(self.cluster.nodes)} idle, and a login host")
        for script in ("gradsync-run.sbatch", "gradsync.sbatch"):
            shutil.copy(os.path.join(EXAMPLES, script), self.cluster.dir)
        self.write_corpus()

    def write_corpus(self):
        with open(os.path.join(self.cluster.data_dir, "corpus.txt"), "wb") as out:
            for name in ("GPL-3", "Apache-2.0"):
                with open(f"/usr/share/common-licenses/{name}", "rb") as f:
                    out.write(f.read())

    def write(self, name, spec):
        path = os.path.join(self.cluster.data_dir, name)
        with open(path, "w") as f:
            json.dump(spec, f, indent=2)
        return path

    def native_spec(self, name, steps, world_size=2, checkpoint_every=50):
        return self.write(f"{name}.json", {
            "name": name,
            "model": {"preset": "gpt-tiny"},
            "data": {"text": {"paths": [os.path.join(self.cluster.data_dir, "corpus.txt")]}},
            "training": {"worldSize": world_size, "microBatch": 2, "maxSteps": steps, "seed": 5, "lr": 0.002,
                         "warmupSteps": 5, "logEvery": 5, "maxRestarts": 3},
            "checkpoint": {"everySteps": checkpoint_every, "keep": 3},
        })

    def script_spec(self, name):
        shutil.copy(os.path.join(REPO, "examples", "torch", "plain_ddp.py"), self.cluster.data_dir)
        return self.write(f"{name}.json", {
            "name": name,
            "script": {"command": ["/usr/bin/python3", "plain_ddp.py", "--epochs", "1", "--samples", "256",
                                   "--out", "script-final.pt"],
                       "workingDir": "."},
            "training": {"worldSize": 2},
        })

    def run(self, spec, state, nodes=2, sbatch_args=()):
        """sbatch gradsync-run.sbatch SPEC with its own state directory; returns the Slurm job id."""
        return self.cluster.sbatch(f"--nodes={nodes}", self.export(state), *sbatch_args,
                                   f"--output={state}.out", os.path.join(self.cluster.dir, "gradsync-run.sbatch"),
                                   spec)

    def export(self, state):
        """sbatch's --export for a run or cluster with this state directory: one CPU worker per node."""
        return f"--export=ALL,GRADSYNC_STATE={state},GRADSYNC_DATA={self.cluster.data_dir},GRADSYNC_CPU_WORKERS=1"

    def state(self, name):
        """A run's state directory (made by the run), beside its Slurm output file."""
        runs = os.path.join(self.cluster.dir, "runs")
        os.makedirs(runs, exist_ok=True)
        os.chown(runs, sc.UID, sc.UID)
        return os.path.join(runs, name)

    def ended(self, job, timeout=150):
        return self.cluster.wait_slurm_job(job, ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"),
                                           timeout)

    def output(self, state):
        try:
            with open(state + ".out") as f:
                return f.read()
        except OSError:
            return "(no output)"

    def result(self, state):
        with open(os.path.join(state, "run-result.json")) as f:
            return json.load(f)

    def expect_success(self, what, job, state):
        record = self.ended(job)
        ok = self.k.expect(record.get("JobState") == "COMPLETED" and record.get("ExitCode") == "0:0",
                           f"{what}: Slurm job {job} ended {record.get('JobState')} with exit code "
                           f"{record.get('ExitCode')}, not COMPLETED 0:0; its output ends:\n{self.output(state)[-3000:]}")
        if not ok:
            return None
        result = self.result(state)
        self.k.expect(result.get("state") == "SUCCEEDED", f"{what}: gradsync's job ended {result.get('state')}")
        log(f"{what}: Slurm job {job} COMPLETED, exit code 0:0; gradsync's {result['id']} SUCCEEDED")
        return result

    def progress(self, state, host="node1"):
        """The step gradsync's job in this run has reached, from its coordinator on the batch host."""
        try:
            jobs = self.cluster.gradsync_jobs(state, host)
        except (OSError, ValueError):
            return -1
        return max([int(j.get("progress", {}).get("step", 0)) for j in jobs if j.get("state") == "RUNNING"],
                   default=-1)

    def wait_step(self, job, state, step, timeout=90):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.progress(state) >= step:
                return
            if self.cluster.job(job).get("JobState") not in ("PENDING", "RUNNING"):
                break
            time.sleep(0.5)
        raise AssertionError(f"the run of {state} did not reach step {step} within {timeout}s; its output:\n"
                             f"{self.output(state)[-3000:]}")

    def agent_log(self, state, node):
        try:
            with open(os.path.join(state, "logs", f"agent-{node}.log")) as f:
                return f.read()
        except OSError:
            return ""

    def coordinator_log(self, state, node="node1"):
        with open(os.path.join(state, "logs", f"coordinator-{node}.log")) as f:
            return f.read()


def events(job, kind):
    return [e for e in job.get("events", []) if e.get("type") == kind]


def resumed_from(job):
    """The step of the newest "resuming from the checkpoint at step N" event, or None."""
    steps = [int(m.group(1)) for e in job.get("events", [])
             for m in [re.search(r"resuming from the checkpoint at step (\d+)", e.get("message", ""))] if m]
    return steps[-1] if steps else None


# ---- slurm-one-run ---------------------------------------------------------------------------
def one_run(k):
    s = SlurmCheck(k, nodes=2)
    spec = s.native_spec("native", steps=300)
    job = s.run(spec, s.state("native"))
    script_job = s.run(s.script_spec("script"), s.state("script"))
    reference = s.expect_success("a native job, one sbatch", job, s.state("native"))
    s.expect_success("a script job, one sbatch", script_job, s.state("script"))
    if reference is None:
        return
    digest = reference["result"]["paramDigest"]

    # scancel mid-run, then the same sbatch again with the same state directory.
    state = s.state("cancelled")
    job = s.run(spec, state)
    s.wait_step(job, state, 60)
    stopped_at = s.progress(state)
    s.cluster.scancel(job)
    record = s.ended(job, timeout=60)
    k.expect(record.get("JobState") == "CANCELLED", f"scancel: Slurm job {job} ended {record.get('JobState')}")
    coordinator = s.coordinator_log(state)
    k.expect("(1 running jobs checkpointed)" in coordinator,
             f"after scancel at step {stopped_at} the coordinator checkpointed no running job:\n{coordinator[-2000:]}")
    log(f"scancel at step {stopped_at}: CANCELLED; the coordinator committed a checkpoint as it stopped")
    again = s.run(spec, state)
    resumed = s.expect_success("the cancelled run, submitted again", again, state)
    if resumed is None:
        return
    k.expect(resumed["id"] == s.result(state)["id"], "the second sbatch submitted another job")
    k.expect("following jobs/" in s.output(state), f"the second sbatch did not follow the first's job:\n"
                                                  f"{s.output(state)[-2000:]}")
    committed = [int(c.get("step", 0)) for c in resumed.get("checkpoints", [])]
    k.expect(int(resumed.get("restarts", 0)) == 0 and events(resumed, "Preempted"),
             f"the preemption was counted as a restart ({resumed.get('restarts')}) or not noted (Preempted events: "
             f"{events(resumed, 'Preempted')})")
    from_step = resumed_from(resumed)
    k.expect(from_step is not None and from_step >= stopped_at,
             f"the second sbatch resumed from step {from_step}, not from the checkpoint taken at scancel "
             f"(step {stopped_at} or later):\n" + "\n".join(e.get("message", "") for e in resumed.get("events", [])))
    got = resumed["result"]["paramDigest"]
    k.expect(got == digest, f"the resumed run's parameter digest {got} differs from the uninterrupted run's {digest}")
    log(f"resumed from step {from_step} to SUCCEEDED (checkpoints at steps {committed}); digest {got} "
        f"{'equals' if got == digest else 'DIFFERS from'} the uninterrupted run's")


# ---- slurm-faults ----------------------------------------------------------------------------
def faults(k):
    s = SlurmCheck(k, nodes=3)
    # A node container killed mid-run: 2 ranks on 3 nodes, so a spare agent waits.
    state = s.state("node-killed")
    job = s.run(s.native_spec("node-killed", steps=400), state, nodes=3)
    s.wait_step(job, state, 60)
    holders = [n for n in s.cluster.nodes[1:] if "assigned rank " in s.agent_log(state, n)]
    if not k.expect(holders, "no node but the batch host holds a rank; agents' logs:\n" +
                    "\n".join(s.agent_log(state, n)[-800:] for n in s.cluster.nodes)):
        return
    victim = holders[0]
    log(f"killing node container {victim} at step {s.progress(state)}")
    k.docker("kill", s.cluster.container(victim))
    result = s.expect_success(f"the run that lost {victim}", job, state)
    if result is not None:
        k.expect(int(result.get("restarts", 0)) >= 1, f"the job ran on without a restart: {result.get('restarts')}")
        lost = events(result, "WorkerLost") + events(result, "RankFailed")
        k.expect(lost, "no WorkerLost or RankFailed event after the node was killed")
        log(f"{victim} killed: the job restarted on the nodes left ({len(lost)} loss events) and SUCCEEDED")

    # The time limit: --signal=B:TERM@110 with --time=2 signals the batch script about 10 s in.
    state = s.state("time-limit")
    job = s.run(s.native_spec("time-limit", steps=100000, checkpoint_every=0), state,
                sbatch_args=("--time=2", "--signal=B:TERM@110"))
    record = s.ended(job, timeout=150)
    k.expect(record.get("JobState") != "TIMEOUT", f"the run reached its time limit ({record.get('JobState')}): "
                                                  f"the signal did not stop it first")
    k.expect(record.get("ExitCode") == "143:0",
             f"the signalled run exited {record.get('ExitCode')}, not 143:0:\n{s.output(state)[-2000:]}")
    coordinator = s.coordinator_log(state)
    k.expect("(1 running jobs checkpointed)" in coordinator,
             f"the coordinator committed no checkpoint before the time limit:\n{coordinator[-2000:]}")
    written = "the checkpoint is written and reported" in s.agent_log(state, "node1")
    k.expect(written, f"no worker wrote its checkpoint on the signal:\n{s.agent_log(state, 'node1')[-2000:]}")
    log(f"time limit: the run stopped with exit code {record.get('ExitCode')} after a committed checkpoint")


# ---- slurm-cluster ---------------------------------------------------------------------------
def start_cluster(s, state):
    """sbatch gradsync.sbatch with this state directory; returns the Slurm job id once cluster.env is there."""
    cl = s.cluster
    job = cl.sbatch("--nodes=2", s.export(state), f"--output={state}-%j.out", os.path.join(cl.dir, "gradsync.sbatch"))
    cl.wait_slurm_job(job, ("RUNNING",), 60)
    deadline = time.time() + 60
    while time.time() < deadline and not os.path.exists(os.path.join(state, "cluster.env")):
        time.sleep(0.5)
    if not os.path.exists(os.path.join(state, "cluster.env")):
        raise AssertionError(f"the cluster of Slurm job {job} never wrote cluster.env:\n{s.output(f'{state}-{job}')[-2000:]}")
    return job


def stop_cluster(s, job, state):
    cl, k = s.cluster, s.k
    cl.scancel(job)
    record = cl.wait_slurm_job(job, ("CANCELLED", "COMPLETED", "FAILED"), 60)
    k.expect(record.get("JobState") == "CANCELLED", f"scancel: the cluster's Slurm job ended {record.get('JobState')}")
    k.expect(not os.path.exists(os.path.join(state, "cluster.env")), "cluster.env stayed after scancel")
    for node in cl.nodes:
        left = [line for line in k.docker("top", cl.container(node)).splitlines()[1:] if "gradsync" in line]
        k.expect(not left, f"{node} still runs {left} after scancel")


def from_login(s, state, command, timeout=180):
    """A gradsync command on the login host, with the cluster's cluster.env."""
    return s.cluster.exec("login", "bash", "-c", f". {state}/cluster.env && {command}", check=False, timeout=timeout)


def long_lived(k):
    s = SlurmCheck(k, nodes=2)
    state = s.state("cluster")
    job = start_cluster(s, state)
    r = from_login(s, state, f"gradsync submit {s.native_spec('from-login', steps=20)} --wait -o json")
    k.expect(r.returncode == 0, f"gradsync submit --wait from the login host exited {r.returncode}:\n"
                                f"{r.stdout[-1500:]}{r.stderr[-1500:]}")
    log(f"a job submitted from the login host through cluster.env: exit {r.returncode}")

    # A job running when the cluster is cancelled resumes in the next allocation.
    r = from_login(s, state, f"gradsync submit {s.native_spec('across-allocations', steps=300)} -o name")
    if not k.expect(r.returncode == 0, f"gradsync submit from the login host failed: {r.stdout}{r.stderr}"):
        return
    name = r.stdout.strip()
    s.wait_step(job, state, 60)
    stopped_at = s.progress(state)
    stop_cluster(s, job, state)
    log(f"scancel of the cluster at step {stopped_at} of {name}: CANCELLED, nothing left on the nodes")
    job = start_cluster(s, state)
    r = from_login(s, state, f"gradsync watch {name} -o json > /dev/null && gradsync get {name} -o json")
    if k.expect(r.returncode == 0, f"{name} did not succeed in the second allocation: {r.stdout[-2000:]}{r.stderr[-1500:]}"):
        resumed = json.loads(r.stdout)
        from_step = resumed_from(resumed)
        k.expect(from_step is not None and from_step >= stopped_at,
                 f"{name} resumed from step {from_step}, not from the checkpoint taken at scancel (step {stopped_at})")
        k.expect(int(resumed.get("restarts", 0)) == 0 and events(resumed, "Preempted"),
                 f"the preemption of {name} was counted as a restart ({resumed.get('restarts')}) or not noted")
        log(f"the second allocation resumed {name} from step {from_step} to SUCCEEDED, no restart counted")
    stop_cluster(s, job, state)


CHECKS = {"slurm-one-run": one_run, "slurm-faults": faults, "slurm-cluster": long_lived}

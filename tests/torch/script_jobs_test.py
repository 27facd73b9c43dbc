"""Script jobs end to end, with real processes: `gradsync run -- COMMAND` against torchrun, the
torchrun environment every rank gets, and how a child's failure, death, hang-up or cancel ends.

Each case starts its own local cluster with `gradsync run --state-dir DIR -o json`, reads the
summary it prints, the rank logs under DIR/logs/jobs, and what tests/torch/rank_probe.py recorded.
"Nothing left running" is checked on the pids the probes recorded, their grandchildren included.
Exit 77 (skipped) without Debian's PyTorch.
"""
import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

try:
    import torch
except ImportError:
    print("SKIP: PyTorch is missing (Debian's python3-torch, run as /usr/bin/python3)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
gt = None  # gradsync.torch, imported once --python-dir is known
ROOT = os.path.dirname(os.path.dirname(HERE))
PLAIN_DDP = os.path.join(ROOT, "examples", "torch", "plain_ddp.py")
PROBE = os.path.join(HERE, "rank_probe.py")
GRADSYNC_DDP = os.path.join(HERE, "gradsync_ddp.py")
U = 2.0**-24  # fp32's unit roundoff
PYTHON = sys.executable
TORCHRUN = os.path.join(os.path.dirname(PYTHON), "torchrun")


class Case:
    def __init__(self, gradsync, workdir, name):
        self.gradsync = gradsync
        self.dir = os.path.join(workdir, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.out = os.path.join(self.dir, "out")
        self.state = os.path.join(self.dir, "state")
        os.makedirs(self.out)

    def run_args(self, workers, command, sets=()):
        args = [self.gradsync, "run", "--workers", str(workers), "--state-dir", self.state, "-o", "json"]
        for s in sets:
            args += ["--set", s]
        return args + ["--"] + command

    def run(self, workers, command, sets=(), timeout=120, env=None):
        """Runs to the end; returns (exit code, summary or None, stderr)."""
        done = subprocess.run(self.run_args(workers, command, sets), cwd=self.dir, capture_output=True, text=True,
                              timeout=timeout, env=env)
        try:
            summary = json.loads(done.stdout)
        except json.JSONDecodeError:
            summary = None
        return done.returncode, summary, done.stderr

    def ddp(self, sub, *options):
        """gradsync_ddp.py writing to out/<sub>."""
        out = os.path.join(self.out, sub)
        os.makedirs(out, exist_ok=True)
        return [PYTHON, GRADSYNC_DDP, "--out", out, *options]

    def final(self, sub, rank):
        return torch.load(os.path.join(self.out, sub, f"final-rank{rank}.pt"))

    def probe(self, *options):
        return [PYTHON, PROBE, "--out", self.out, *options]

    def records(self):
        out = {}
        for path in glob.glob(os.path.join(self.out, "rank*-restart*.json")):
            name = os.path.basename(path)[:-len(".json")]
            with open(path) as f:
                out[name] = json.load(f)
        return out

    def rank_log(self, rank):
        text = ""
        for path in glob.glob(os.path.join(self.state, "logs", "jobs", "*", f"rank-{rank}.log")):
            with open(path) as f:
                text += f.read()
        return text

    def wait_for(self, names, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if all(os.path.exists(os.path.join(self.out, n + ".json")) for n in names):
                return self.records()
            time.sleep(0.05)
        raise AssertionError(f"{names} never started; have {sorted(self.records())}")


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie whose parent is gone is reaped by init; one still listed as Z is not running.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def check_nothing_left(records):
    pids = []
    for r in records.values():
        pids.append(r["pid"])
        if "grandchild" in r:
            pids.append(r["grandchild"])
    deadline = time.time() + 5
    while time.time() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    check(not left, f"processes left running: {left}")


def test_plain_ddp_matches_torchrun(c):
    """plain_ddp.py, unmodified, ends with torchrun's final weights, bit for bit."""
    shutil.copy(PLAIN_DDP, c.dir)
    subprocess.run([TORCHRUN, "--nproc_per_node", "2", "--redirects", "1", "--tee", "1", "--log_dir",
                    os.path.join(c.dir, "torchrun-logs"), "plain_ddp.py", "--out", "torchrun.pt"],
                   cwd=c.dir, check=True, capture_output=True, timeout=120)
    code, summary, err = c.run(2, [PYTHON, "plain_ddp.py", "--out", "gradsync.pt"])
    check(code == 0, f"gradsync run exited {code}: {err[-2000:]}")
    check(summary["state"] == "SUCCEEDED" and summary["restarts"] == 0, f"summary: {summary}")
    check(summary["command"] == [PYTHON, "plain_ddp.py", "--out", "gradsync.pt"], f"command: {summary['command']}")
    a = torch.load(os.path.join(c.dir, "torchrun.pt"))
    b = torch.load(os.path.join(c.dir, "gradsync.pt"))
    check(sorted(a) == sorted(b), f"tensors differ in names: {sorted(a)} vs {sorted(b)}")
    for name in a:
        check(torch.equal(a[name], b[name]), f"{name} differs: max |diff| {(a[name] - b[name]).abs().max().item()}")
    # Rank 0's stdout is its job log.
    check("saved gradsync.pt after" in c.rank_log(0), "rank 0's log lacks the script's output")


def test_torchrun_environment(c):
    """Every rank gets torchrun's variables, its own process group, the submit directory."""
    code, summary, err = c.run(3, c.probe("--grandchild"), sets=["script.env.PROBE_EXTRA=yes"])
    check(code == 0, f"exited {code}: {err[-2000:]}")
    records = c.records()
    check(sorted(records) == [f"rank{r}-restart0" for r in range(3)], f"starts: {sorted(records)}")
    masters = set()
    for r in range(3):
        e = records[f"rank{r}-restart0"]
        check(e["RANK"] == str(r) and e["ROLE_RANK"] == str(r) and e["LOCAL_RANK"] == str(r), f"rank {r}: {e}")
        check(e["WORLD_SIZE"] == "3" and e["LOCAL_WORLD_SIZE"] == "3" and e["ROLE_WORLD_SIZE"] == "3", f"{e}")
        check(e["GROUP_RANK"] == "0" and e["GROUP_WORLD_SIZE"] == "1", f"one host is one group: {e}")
        check(e["TORCHELASTIC_RUN_ID"] == summary["id"], f"run id {e['TORCHELASTIC_RUN_ID']} vs {summary['id']}")
        check(e["TORCHELASTIC_RESTART_COUNT"] == "0" and e["TORCHELASTIC_MAX_RESTARTS"] == "3", f"{e}")
        check(e["TORCHELASTIC_USE_AGENT_STORE"] == "False" and e["OMP_NUM_THREADS"] == "1", f"{e}")
        check(e["PROBE_EXTRA"] == "yes", "script.env did not reach the child")
        check(e["pgid"] == e["pid"], f"rank {r} does not lead its own process group")
        check(os.path.realpath(e["cwd"]) == os.path.realpath(c.dir), f"cwd {e['cwd']}")
        check(int(e["MASTER_PORT"]) > 0, f"port {e['MASTER_PORT']}")
        masters.add((e["MASTER_ADDR"], e["MASTER_PORT"]))
    check(len(masters) == 1, f"ranks disagree on the master: {masters}")
    check("says this on stderr" in c.rank_log(2), "rank 2's stderr is not in its log")
    check_nothing_left(records)


def test_failing_rank_restarts_the_job(c):
    """Rank 1 exits 1 in the first generation: the others are stopped (one ignores SIGTERM and is
    killed after the grace), and the job restarts with TORCHELASTIC_RESTART_COUNT=1."""
    code, summary, err = c.run(3, c.probe("--fail-rank", "1", "--ignore-term", "--grandchild"),
                               sets=["script.stopGraceSeconds=1", "training.maxRestarts=2"])
    check(code == 0, f"exited {code}: {err[-2000:]}")
    check(summary["state"] == "SUCCEEDED" and summary["restarts"] == 1, f"summary: {summary}")
    records = c.records()
    check(sorted(records) == sorted(f"rank{r}-restart{k}" for r in range(3) for k in range(2)), f"{sorted(records)}")
    log0 = c.rank_log(0)
    check("stopping" in log0 and "killed by signal 9" in log0, "rank 0 (ignoring SIGTERM) was not killed")
    check_nothing_left(records)


def test_failure_past_max_restarts_fails_the_job(c):
    code, summary, err = c.run(2, c.probe("--fail-rank", "0", "--fail-until-restart", "9"),
                               sets=["training.maxRestarts=1"])
    check(code == 1 and summary["state"] == "FAILED", f"exited {code}, summary {summary}")
    check(summary["restarts"] == 1, f"restarts {summary['restarts']}")
    check("exited with status 1" in summary["stateReason"] and "fails on purpose" in summary["stateReason"],
          f"reason: {summary['stateReason']}")
    check_nothing_left(c.records())


def test_missing_command_fails_at_once(c):
    code, summary, err = c.run(2, ["gradsync-no-such-program"])
    check(code == 1 and summary["state"] == "FAILED", f"exited {code}, summary {summary}")
    check(summary["restarts"] == 0, f"a missing program was retried: {summary}")
    check("script.command[0]" in summary["stateReason"] and "not found" in summary["stateReason"],
          f"reason: {summary['stateReason']}")


def test_killed_child_restarts_the_job(c):
    proc = subprocess.Popen(c.run_args(2, c.probe("--hold-rank", "1")), cwd=c.dir, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    held = c.wait_for(["rank1-restart0"])["rank1-restart0"]
    os.kill(held["pid"], signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    summary = json.loads(out)
    check(proc.returncode == 0 and summary["restarts"] == 1, f"exited {proc.returncode}: {summary} {err[-2000:]}")
    check("killed by signal 9" in c.rank_log(1), "rank 1's log does not say how its child died")
    check_nothing_left(c.records())


def test_cancel_stops_every_child(c):
    """Ctrl-C on gradsync run cancels the job: every child's group is stopped, SIGTERM-deaf ones too."""
    proc = subprocess.Popen(c.run_args(2, c.probe("--hold-always", "--ignore-term", "--grandchild"),
                                       sets=["script.stopGraceSeconds=1"]),
                            cwd=c.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    records = c.wait_for(["rank0-restart0", "rank1-restart0"])
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    check(proc.returncode == 130, f"exited {proc.returncode}: {err[-2000:]}")
    for r in range(2):
        log = c.rank_log(r)
        check("the job is cancelled" in log and "killed by signal 9" in log, f"rank {r}'s log: {log[-1500:]}")
    check_nothing_left(records)


def body(state):
    return {k: v for k, v in state.items() if k.startswith("body.")}


def check_bitwise(a, b, what):
    check(sorted(a) == sorted(b), f"{what}: names differ")
    for k in a:
        check(torch.equal(a[k], b[k]), f"{what}: {k} differs by up to {(a[k] - b[k]).abs().max().item():.3e}")


def test_exchange_within_the_summation_bound_of_gloo(c):
    """One SGD step on 3 ranks, gradient buckets through gradsync's exchange and through torch's
    Gloo: the same terms g_r / W summed in two orders differ by at most 2 (W - 1) u sum_r |g_r| / W
    (Higham's bound for each), so the weights by at most lr times that, plus the rounding of the
    update itself, 2 u |w|."""
    lr, world = 0.1, 3
    for sub in ("gradsync", "gloo"):
        code, summary, err = c.run(world, c.ddp(sub, "--optimizer", "sgd", "--lr", str(lr), "--max-steps", "1",
                                                "--exchange", sub, "--dump-grad-bound"))
        check(code == 0, f"{sub}: exited {code}: {err[-2000:]}")
    check("through gradsync's exchange over 3 ranks" in c.rank_log(0), "the exchange was not used")
    a, b = body(c.final("gradsync", 0)), body(c.final("gloo", 0))
    sums = torch.load(os.path.join(c.out, "gradsync", "grad-abs-sum.pt"))
    gamma = 2 * (world - 1) * U / (1 - (world - 1) * U)
    worst = 0.0
    for (name, wa), s in zip(a.items(), sums):
        wb = b[name]
        bound = lr * gamma * s * (1 + U) + 2 * U * torch.maximum(wa.abs(), wb.abs())
        diff = (wa - wb).abs()
        check(bool((diff <= bound).all()), f"{name}: |diff| {diff.max().item():.3e} past the bound")
        worst = max(worst, (diff / bound.clamp_min(1e-45)).max().item())
    print(f"  exchange vs Gloo after one step: at most {worst:.2f} of the summation bound", flush=True)


def test_exchange_repeats_bit_for_bit_and_ignored_state_stays_local(c):
    for sub in ("first", "second"):
        code, summary, err = c.run(3, c.ddp(sub, "--epochs", "2"))
        check(code == 0, f"{sub}: exited {code}: {err[-2000:]}")
    for r in range(3):
        check_bitwise(c.final("first", r), c.final("second", r), f"rank {r}, run 1 vs run 2")
    ranks = [c.final("first", r) for r in range(3)]
    check_bitwise(body(ranks[0]), body(ranks[1]), "replicas 0 and 1")
    check_bitwise(body(ranks[0]), body(ranks[2]), "replicas 0 and 2")
    for r in range(3):
        check(torch.equal(ranks[r]["rank_tag"], torch.full((3,), float(r))), f"rank {r}'s ignored buffer was synced")
    scales = [ranks[r]["scale.local_scale"].item() for r in range(3)]
    # Each rank adds 0.001 a step to its own 1 + rank in fp32: they stay about 1 apart.
    check(all(abs(scales[r] - scales[0] - r) < 1e-4 for r in range(3)), f"ignored parameter synced: {scales}")


def check_once_per_epoch(sample_dir, job_id, samples, world, resume):
    """The audit: every generation's positions up to where the next resumed, then the last one's,
    cover each epoch's positions exactly once, with each sample index once."""
    lines = {}
    for path in glob.glob(os.path.join(sample_dir, job_id, "torch-g*-r*.log")):
        gen = int(os.path.basename(path).split("-")[1][1:])
        with open(path) as f:
            lines.setdefault(gen, []).extend(tuple(map(int, line.split())) for line in f)
    expected = sorted(resume) + [max(resume) + 1] if resume else [1]
    check(sorted(lines) == expected, f"generations {sorted(lines)}, expected {expected}")
    kept = []
    for gen, entries in lines.items():
        if gen in resume:
            epoch, cursor = resume[gen]
            entries = [e for e in entries if (e[0], e[1]) < (epoch, cursor)]
        kept.extend(entries)
    by_epoch = {}
    for epoch, position, index in kept:
        by_epoch.setdefault(epoch, []).append((position, index))
    usable = samples - samples % world
    for epoch, entries in by_epoch.items():
        positions = sorted(p for p, _ in entries)
        check(positions == list(range(usable)), f"epoch {epoch}: positions not each once ({len(positions)} kept)")
        check(len({i for _, i in entries}) == usable, f"epoch {epoch}: a sample index twice")


def test_killed_child_resumes_from_the_committed_checkpoint_bit_for_bit(c):
    sample_dir = os.path.join(c.dir, "samples")
    env = dict(os.environ, GRADSYNC_SAMPLE_LOG_DIR=sample_dir)
    code, summary, err = c.run(2, c.ddp("whole", "--save-every", "5"))
    check(code == 0, f"uninterrupted: exited {code}: {err[-2000:]}")
    code, summary, err = c.run(2, c.ddp("killed", "--save-every", "5", "--kill-at", "22"), env=env)
    check(code == 0 and summary["restarts"] == 1, f"killed: exited {code}: {summary} {err[-2000:]}")
    check("resumed at step 20" in c.rank_log(0), "rank 0 did not resume from step 20's checkpoint")
    for r in range(2):
        check_bitwise(c.final("whole", r), c.final("killed", r), f"rank {r}, uninterrupted vs killed and resumed")
    manifests = glob.glob(os.path.join(c.state, "artifacts", summary["id"], "checkpoints", "step-*", "MANIFEST.json"))
    resumed = [json.load(open(m)) for m in manifests if "step-000000020" in m]
    check(resumed, f"step 20's checkpoint is not among {manifests}")
    m = resumed[0]
    check_once_per_epoch(sample_dir, summary["id"], 240, 2, {1: (m.get("epoch", 0), int(m.get("cursor", 0)))})


def held_worker(c, sub, proc, step):
    """The pid of the worker whose rank holds at `step` (gradsync_ddp.py --hold-at), once it does."""
    pid_file = os.path.join(c.out, sub, "worker.pid")
    deadline = time.time() + 60
    while not os.path.exists(pid_file) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    check(os.path.exists(pid_file), f"rank 1 never reached step {step}")
    with open(pid_file) as f:
        worker = int(f.read())
    with open(f"/proc/{worker}/cmdline", "rb") as f:
        check(b"gradsync-worker" in f.read(), "the child's parent is not a worker")
    return worker


def test_killed_worker_resumes_from_the_committed_checkpoint_bit_for_bit(c):
    """SIGKILL to a worker mid-run (its child dies with it): the job restarts on the worker the local
    cluster starts again, and ends as an uninterrupted run does."""
    code, summary, err = c.run(2, c.ddp("whole", "--save-every", "5"))
    check(code == 0, f"uninterrupted: exited {code}: {err[-2000:]}")
    proc = subprocess.Popen(c.run_args(2, c.ddp("killed", "--save-every", "5", "--hold-at", "22")), cwd=c.dir,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    worker = held_worker(c, "killed", proc, 22)
    os.kill(worker, signal.SIGKILL)
    out, err = proc.communicate(timeout=180)
    summary = json.loads(out)
    check(proc.returncode == 0 and summary["restarts"] >= 1, f"exited {proc.returncode}: {summary} {err[-2000:]}")
    check("resumed at step 20" in c.rank_log(0), "rank 0 did not resume from step 20's checkpoint")
    for r in range(2):
        check_bitwise(c.final("whole", r), c.final("killed", r), f"rank {r}, uninterrupted vs worker killed")


def test_exchange_on_a_gpu(c):
    """Waits for a GPU (skipped without one, as on the development machine and in CI): one rank over
    NCCL, then two ranks sharing the GPU over Gloo staged through host memory (NCCL refuses two
    ranks on one GPU), each against torch's own all-reduce of the same buckets, within the summation
    bound of the CPU case."""
    if not torch.cuda.is_available():
        print("  SKIP: no GPU visible to torch", flush=True)
        return
    lr = 0.1
    for world, backend in ((1, "nccl"), (2, "gloo")):
        for sub in ("gradsync", "gloo"):
            name = f"{backend}-{world}-{sub}"
            code, summary, err = c.run(world, c.ddp(name, "--device", "cuda", "--optimizer", "sgd", "--lr", str(lr),
                                                    "--max-steps", "1", "--exchange", sub, "--dump-grad-bound"))
            check(code == 0, f"{name}: exited {code}: {err[-2000:]}")
        check(f"({backend} on cuda" in c.rank_log(0), f"{world} rank(s) did not exchange over {backend}")
        a, b = body(c.final(f"{backend}-{world}-gradsync", 0)), body(c.final(f"{backend}-{world}-gloo", 0))
        sums = torch.load(os.path.join(c.out, f"{backend}-{world}-gradsync", "grad-abs-sum.pt"), map_location="cpu")
        gamma = 2 * max(world - 1, 1) * U / (1 - max(world - 1, 1) * U)
        for (name, wa), s in zip(a.items(), sums):
            bound = lr * gamma * s * (1 + U) + 2 * U * torch.maximum(wa.abs(), b[name].abs())
            check(bool(((wa - b[name]).abs() <= bound).all()), f"{backend}, {world} ranks: {name} past the bound")


def leftover(marker):
    """Processes whose command line holds `marker`, this test's own excepted."""
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out if int(p) != os.getpid() and alive(int(p))]


def test_hang_in_a_collective_is_named_and_ends_the_job(c):
    """Rank 1 hangs before its backward; rank 0 waits in the exchange's all-reduce. The hang
    diagnosis names rank 1 (it issued fewer collectives), the exchange's timeout (ddp.timeoutSeconds)
    fails rank 0, and with no restart left the job fails with nothing left running."""
    command = c.ddp("hang", "--hang-at", "3")
    code, summary, err = c.run(2, command, sets=["ddp.timeoutSeconds=12", "training.maxRestarts=0"])
    check(code == 1 and summary["state"] == "FAILED", f"exited {code}: {summary}")
    stalled = [line for line in err.splitlines() if "[Stalled]" in line]
    check(stalled and "rank 1" in stalled[0], f"no Stalled event naming rank 1: {stalled or err[-1500:]}")
    check("gradsync exchange" in stalled[0], f"the diagnosis does not say where rank 0 waits: {stalled[0]}")
    deadline = time.time() + 5
    while leftover(command[-3]) and time.time() < deadline:
        time.sleep(0.05)
    check(not leftover(command[-3]), f"left running: {leftover(command[-3])}")


def test_submit_to_a_running_cluster(c):
    """`gradsync submit --workers 2 -- COMMAND` to a `local up` cluster whose data root holds the
    current directory; `gradsync logs --rank 1` shows that rank's stderr; the workers are idle again.
    Then `gradsync cancel` of a running script job whose children ignore SIGTERM: CANCELLED, nothing
    left running."""
    g = c.gradsync
    subprocess.run([g, "local", "up", "--workers", "2", "--state-dir", c.state, "--data-root", c.dir], check=True,
                   capture_output=True, timeout=60)
    try:
        done = subprocess.run([g, "submit", "--state-dir", c.state, "--workers", "2", "--wait", "-o", "json", "--",
                               *c.probe()], cwd=c.dir, capture_output=True, text=True, timeout=120)
        check(done.returncode == 0, f"submit exited {done.returncode}: {done.stderr[-2000:]}")
        summary = json.loads(done.stdout)
        check(summary["state"] == "SUCCEEDED" and summary["worldSize"] == 2, f"summary: {summary}")
        logs = subprocess.run([g, "logs", summary["id"], "--rank", "1", "--state-dir", c.state], capture_output=True,
                              text=True, timeout=60)
        check("rank 1 says this on stderr" in logs.stdout, f"logs --rank 1: {logs.stdout[-1500:]} {logs.stderr}")
        check("rank 0 started" not in logs.stdout, "rank 0's lines in rank 1's log")
        deadline = time.time() + 10
        while time.time() < deadline:
            pool = json.loads(subprocess.run([g, "workers", "-o", "json", "--state-dir", c.state], capture_output=True,
                                             text=True, timeout=30).stdout)
            states = [w["state"] for w in pool.get("items", [])]
            if states == ["WORKER_IDLE"] * 2:
                break
            time.sleep(0.2)
        check(states == ["WORKER_IDLE"] * 2, f"workers after the job: {states}")
        check_nothing_left(c.records())
        # A cancel mid-run, of children deaf to SIGTERM: CANCELLED once every group is gone.
        for name in glob.glob(os.path.join(c.out, "rank*.json")):
            os.remove(name)
        held = subprocess.run([g, "submit", "--state-dir", c.state, "--workers", "2", "--set",
                               "script.stopGraceSeconds=1", "-o", "name", "--", *c.probe("--hold-always",
                                                                                       "--ignore-term")],
                              cwd=c.dir, capture_output=True, text=True, timeout=60)
        check(held.returncode == 0, f"submit: {held.stderr}")
        records = c.wait_for(["rank0-restart0", "rank1-restart0"])
        cancelled = subprocess.run([g, "cancel", held.stdout.strip(), "--state-dir", c.state, "-o", "json"],
                                   capture_output=True, text=True, timeout=120)
        job = json.loads(cancelled.stdout)
        check(job["state"] == "CANCELLED" and "commands of 2 ranks were stopped" in job["stateReason"],
              f"cancel: {job['state']}: {job.get('stateReason')}")
        check_nothing_left(records)
    finally:
        subprocess.run([g, "local", "down", "--state-dir", c.state], capture_output=True, timeout=60)


def test_elastic_script_resumes_exactly_once_at_another_world_size(c):
    """An elastic script job (3 ranks, at least 2) loses a worker mid-epoch (frozen with SIGSTOP, so
    no supervisor starts it again): it goes on with 2 ranks from the last committed checkpoint, and
    the samplers' audit shows every sample of every epoch exactly once across the resize."""
    g = c.gradsync
    sample_dir = os.path.join(c.dir, "samples")
    env = dict(os.environ, GRADSYNC_SAMPLE_LOG_DIR=sample_dir)
    subprocess.run([g, "local", "up", "--workers", "3", "--state-dir", c.state, "--data-root", c.dir], check=True,
                   capture_output=True, timeout=60, env=env)
    frozen = None
    try:
        submit = subprocess.Popen([g, "submit", "--state-dir", c.state, "--workers", "3", "--set",
                                   "training.minWorkers=2", "--set", "checkpoint.keep=100", "--wait", "-o", "json", "--",
                                   *c.ddp("elastic", "--epochs", "3", "--save-every", "4", "--hold-at", "14")],
                                  cwd=c.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        frozen = held_worker(c, "elastic", submit, 14)
        os.kill(frozen, signal.SIGSTOP)
        out, err = submit.communicate(timeout=180)
        check(submit.returncode == 0, f"submit exited {submit.returncode}: {err[-2000:]}")
        summary = json.loads(out)
        check(summary["worldSize"] == 2 and summary["restarts"] >= 1, f"summary: {summary}")
        manifest = os.path.join(c.state, "artifacts", summary["id"], "checkpoints", "step-000000012", "MANIFEST.json")
        with open(manifest) as f:
            m = json.load(f)
        check(m.get("worldSize") == 3 and m.get("epoch") == 1 and int(m.get("cursor", 0)) == 48, f"manifest: {m}")
        check_once_per_epoch(sample_dir, summary["id"], 240, 6, {1: (1, 48)})
    finally:
        if frozen is not None:
            os.kill(frozen, signal.SIGKILL)
        subprocess.run([g, "local", "down", "--state-dir", c.state], capture_output=True, timeout=60)


def test_sampler_resumes_at_another_world_size(c):
    """Three ranks take 17 samples each of epoch 0 (cursor 51); two ranks go on from there: every
    position of the epoch once, no sample twice, as a restart at a new world size would."""
    n = 101
    dataset = list(range(n))
    taken = []
    for r in range(3):
        s = gt.DistributedSampler(dataset, num_replicas=3, rank=r, seed=5)
        it = iter(s)
        taken += [next(it) for _ in range(17)]
        check(s.position() == (0, 51), f"rank {r} is at {s.position()}")
    for r in range(2):
        s = gt.DistributedSampler(dataset, num_replicas=2, rank=r, seed=5)
        s.epoch, s._start = 0, 51
        taken += list(s)
        check(s.position() == (1, 0), f"rank {r} did not move to epoch 1: {s.position()}")
    check(len(taken) == n and len(set(taken)) == n, f"{len(taken)} taken, {len(set(taken))} distinct of {n}")


CASES = [test_plain_ddp_matches_torchrun, test_torchrun_environment, test_failing_rank_restarts_the_job,
         test_failure_past_max_restarts_fails_the_job, test_missing_command_fails_at_once,
         test_killed_child_restarts_the_job, test_cancel_stops_every_child,
         test_exchange_within_the_summation_bound_of_gloo,
         test_exchange_repeats_bit_for_bit_and_ignored_state_stays_local,
         test_killed_child_resumes_from_the_committed_checkpoint_bit_for_bit,
         test_killed_worker_resumes_from_the_committed_checkpoint_bit_for_bit,
         test_hang_in_a_collective_is_named_and_ends_the_job, test_submit_to_a_running_cluster,
         test_exchange_on_a_gpu, test_elastic_script_resumes_exactly_once_at_another_world_size,
         test_sampler_resumes_at_another_world_size]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gradsync", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--python-dir", required=True, help="where the gradsync package was built (<build>/python)")
    p.add_argument("cases", nargs="*", help="run only these (names without test_)")
    args = p.parse_args()
    global gt
    sys.path.insert(0, os.path.abspath(args.python_dir))
    import gradsync.torch as gt  # noqa: E402
    failed = 0
    for case in CASES:
        name = case.__name__[len("test_"):]
        if args.cases and name not in args.cases:
            continue
        start = time.time()
        try:
            case(Case(os.path.abspath(args.gradsync), os.path.abspath(args.workdir), name))
            print(f"PASS {name} ({time.time() - start:.1f}s)", flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is reported, the others still run
            failed += 1
            print(f"FAIL {name} ({time.time() - start:.1f}s): {e}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

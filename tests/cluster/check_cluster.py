#!/usr/bin/env python3
"""The cluster checks: gradsync's images run as separate hosts on a private bridge network, and
real faults (a killed container, a cut network, a frozen process, a replaced coordinator) are
injected with the engine's own commands. Each check brings up its own cluster and asserts an
outcome; see README.md.

    check_cluster.py CHECK --build-dir DIR [--tag TAG]

CHECK is one of: across-hosts, rank-killed, network-cut, rank-paused, coordinator-replaced,
prometheus, compose, nodes-script, tls-names, slurm-one-run, slurm-faults, slurm-cluster (slurm_checks.py).
Exits 0 when the check holds, 1 with the reasons when it does not, 77 (skipped) when
no Docker engine can be had or the images are missing."""
import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
from datetime import datetime

sys.path.insert(0, os.path.dirname(__file__))
import cluster as c  # noqa: E402
import slurm_checks  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LEASE_S = 10.0  # the coordinator's --lease-timeout-ms default
HEARTBEAT_S = 1.0  # its --heartbeat-interval-ms default
STALL_S = 5.0  # its --stall-timeout-ms default


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- the jobs ----------------------------------------------------------------------------------
def write_corpus(data_dir):
    """Text both the containers and the local reference read, byte for byte."""
    with open(os.path.join(data_dir, "corpus.txt"), "wb") as out:
        for name in ("GPL-3", "Apache-2.0", "LGPL-2.1"):
            with open(f"/usr/share/common-licenses/{name}", "rb") as f:
                out.write(f.read())


def write_spec(path, data_dir, world_size, steps, transport="auto", checkpoint_every=0):
    spec = {
        "name": os.path.splitext(os.path.basename(path))[0],
        "model": {"preset": "gpt-tiny"},
        "data": {"text": {"paths": [os.path.join(data_dir, "corpus.txt")]}},
        "training": {"worldSize": world_size, "microBatch": 4, "maxSteps": steps, "seed": 11, "lr": 0.002,
                     "warmupSteps": 10, "gradClip": 1.0, "logEvery": 10},
        "ddp": {"transport": transport},
    }
    if checkpoint_every:
        spec["checkpoint"] = {"everySteps": checkpoint_every, "keep": 3}
    with open(path, "w") as f:
        json.dump(spec, f, indent=2)
    return path


def local_reference(build_dir, spec_path, workers, work_dir):
    """The same job as local processes with ddp.transport tcp: its summary and weights."""
    state = os.path.join(work_dir, "local-" + os.path.basename(spec_path))
    shutil.rmtree(state, ignore_errors=True)
    r = subprocess.run([os.path.join(build_dir, "bin", "gradsync"), "run", spec_path, "--workers", str(workers),
                        "--state-dir", state, "--set", "ddp.transport=tcp", "-o", "json"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise AssertionError(f"the local reference run failed ({r.returncode}):\n{r.stdout}\n{r.stderr[-3000:]}")
    summary = json.loads(r.stdout)
    return summary, sha256(summary["weightsPath"])


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Check:
    def __init__(self, args):
        self.args = args
        self.docker = c.Docker(REPO)
        images = ("slurm",) if args.check in slurm_checks.CHECKS else ("coordinator", "metrics", "worker-cpu", "cli",
                                                                         "prometheus")
        for image in images:
            if not self.docker.has_image(f"gradsync/{image}:{args.tag}"):
                print(f"SKIP: image gradsync/{image}:{args.tag} is missing; build it with `make images`")
                sys.exit(77)
        self.cluster = c.Cluster(self.docker, f"gs-{args.check}", tag=args.tag,
                                 coordinator_args=args.coordinator_arg, worker_docker_args=args.worker_docker_arg)
        self.failures = []

    def expect(self, ok, message):
        if not ok:
            self.failures.append(message)
            log(f"FAIL: {message}")
        return ok

    def spec(self, world_size, steps, checkpoint_every=0):
        write_corpus(self.cluster.data_dir)
        name = f"{self.args.check}-w{world_size}-s{steps}.json"
        path = write_spec(os.path.join(self.cluster.data_dir, name), self.cluster.data_dir, world_size, steps,
                          checkpoint_every=checkpoint_every)
        if self.args.spec:
            with open(path) as f:
                spec = json.load(f)
            for item in self.args.spec:
                key, value = item.split("=", 1)
                *parents, leaf = key.split(".")
                node = spec
                for part in parents:
                    node = node.setdefault(part, {})
                try:
                    node[leaf] = json.loads(value)
                except ValueError:
                    node[leaf] = value
            with open(path, "w") as f:
                json.dump(spec, f, indent=2)
        return path

    def ranks(self, job_id, generation):
        """role -> rank of each worker in a generation, from the workers' own logs
        ("assigned rank R/N of job J generation G")."""
        out = {}
        suffix = f" of job {job_id} generation {generation}"
        for w in self.cluster.workers:
            for line in self.cluster.logs(w).splitlines():
                if "assigned rank " in line and line.rstrip().endswith(suffix):
                    out[w] = int(line.split("assigned rank ", 1)[1].split("/", 1)[0])
        return out

    def wait_step(self, job_id, step):
        return self.cluster.wait_job(job_id, lambda j: int(j.get("progress", {}).get("step", 0)) >= step,
                                     timeout=300, what=f"step {step}")

    def final_weights(self, job):
        dest = os.path.join(self.cluster.dir, "weights.bin")
        self.cluster.copy_out("coordinator", job["result"]["weightsPath"], dest)
        return sha256(dest)

    def fetched_weights(self, job, weights):
        """The job's weights through `gradsync artifacts get` from the coordinator, over gRPC and
        REST, must be the file in its container (sha256 `weights`), and the CLI's own line must say
        so."""
        job_id = job["id"]
        rel = job["result"]["weightsPath"].split(f"/{job_id}/", 1)[1]
        for address in ("coordinator:7070", "http://coordinator:8080"):
            dest = os.path.join(self.cluster.dir, "fetched-" + address.split(":")[0].replace("/", ""))
            line = self.cluster.artifacts_get(job_id, rel, dest, address)
            got = sha256(os.path.join(dest, rel))
            self.expect(got == weights, f"weights fetched with gradsync artifacts get over {address} have sha256 "
                                        f"{got}, the coordinator's file {weights}")
            self.expect(line.split(" ", 1)[0] == weights,
                        f"gradsync artifacts get over {address} printed {line.strip()!r}, not sha256 {weights}")
        log(f"gradsync artifacts get {rel} over gRPC and REST: sha256 {weights[:16]}..., as in the container")

    def matches_reference(self, job, spec_path, workers):
        log("running the same job as local processes with ddp.transport tcp")
        ref, ref_weights = local_reference(self.args.build_dir, spec_path, workers, self.cluster.dir)
        got = job["result"]["paramDigest"]
        self.expect(got == ref["paramDigest"],
                    f"parameter digest {got} differs from the local run's {ref['paramDigest']}")
        weights = self.final_weights(job)
        self.fetched_weights(job, weights)
        self.expect(weights == ref_weights,
                    f"final weights sha256 {weights} differ from the local run's {ref_weights}")
        log(f"digest {got}, weights sha256 {weights[:16]}...: "
            f"{'equal to' if got == ref['paramDigest'] and weights == ref_weights else 'NOT equal to'} the local run")


# ---- the checks --------------------------------------------------------------------------------
def across_hosts(k):
    """A 3-worker job trains over TCP across hosts and equals the local TCP run bit for bit; its weights
    come out through `gradsync artifacts get` as they are in the coordinator's container."""
    spec = k.spec(world_size=3, steps=60)
    job_id = k.cluster.submit(spec)
    log(f"submitted {job_id}; 3 ranks on worker-0..2")
    job = k.cluster.wait_done(job_id)
    k.expect(int(job["result"].get("worldSize", 0)) == 3, f"world size {job['result'].get('worldSize')}, not 3")
    for w in k.cluster.workers:
        text = k.cluster.logs(w)
        k.expect("computes on cpu, fp32, gloo" in text, f"{w} never said which transport its rank computes on")
        k.expect("gloo (shared memory)" not in text, f"{w} took the shared-memory path across hosts")
        k.expect("all-reduce over TCP" in text, f"{w} did not log that its all-reduce runs over TCP")
    k.matches_reference(job, spec, workers=3)


def interrupted_job(k, inject, steps=120, at_step=40, checkpoint_every=10):
    """A 2-rank job on 3 workers (one spare), a fault injected at `at_step` by `inject(job_id,
    victim, ranks)`, and then the job's end, compared bit for bit with the uninterrupted local run.
    The fault lands after several checkpoints, with two thirds of the job still to run: a restart
    resumes from a checkpoint, not from the start, and the job cannot end before the fault."""
    spec = k.spec(world_size=2, steps=steps, checkpoint_every=checkpoint_every)
    job_id = k.cluster.submit(spec)
    k.wait_step(job_id, at_step)
    ranks = k.ranks(job_id, 1)
    victim = next((w for w, r in ranks.items() if r == 1), None)
    if not k.expect(victim is not None, f"no worker logged rank 1 of {job_id} generation 1: {ranks}"):
        return None, job_id
    log(f"ranks {ranks}; fault on {victim} at step >= {at_step}")
    inject(job_id, victim, ranks)
    job = k.cluster.wait_done(job_id)
    k.matches_reference(job, spec, workers=2)
    return job, job_id


def recovered_live(k, job, victim):
    """The job's next generation resumed from the survivor's memory (training.recovery "live"): a
    QuorumChanged event with the victim gone, no checkpoint read, at most one committed step lost."""
    changed = event_after(job, ("QuorumChanged",), 0)
    if not k.expect(changed is not None, f"no QuorumChanged event: {c.describe_events(job)}"):
        return
    log(f"QuorumChanged: {changed['message']}")
    k.expect(f"left: {victim}" in changed["message"], f"QuorumChanged does not say {victim} left: {changed['message']}")
    k.expect("no checkpoint read" in changed["message"], f"the recovery read a checkpoint: {changed['message']}")
    scheduled = [e["message"] for e in c.events(job, "Scheduled")]
    k.expect(not any("resuming from the checkpoint" in m for m in scheduled),
             f"a generation resumed from a checkpoint: {scheduled}")
    recovery = job.get("recovery", {})
    # A step is lost only where the killed rank had finished one its peers had not: at most one.
    k.expect(int(recovery.get("liveRecoveries", 0)) == 1 and int(recovery.get("stepsLost", 0)) <= 1,
             f"the job's recovery account is {recovery}, not one live recovery that lost at most a step")
    recovered = event_after(job, ("Recovered",), 0)
    if k.expect(recovered is not None, f"no Recovered event: {c.describe_events(job)}"):
        log(f"Recovered: {recovered['message']}")


def rank_killed(k):
    """`docker kill` of a rank's container mid-run: the job ends SUCCEEDED, bitwise equal, having
    resumed live from the survivor's memory."""
    killed = []

    def inject(job_id, victim, ranks):
        k.docker("kill", k.cluster.container(victim))
        killed.append(victim)
        log(f"killed {victim}")
    job, _ = interrupted_job(k, inject)
    if job:
        k.expect(int(job.get("restarts", 0)) >= 1, "the job did not restart after its worker was killed")
        lost = loss_event(job, 0)
        k.expect(lost and "rank 1" in lost["message"],
                 f"no RankFailed or WorkerLost event names rank 1: {lost}")
        if lost:
            log(f"{lost['type']}: {lost['message']}")
        recovered_live(k, job, killed[0])


def event_after(job, kinds, since):
    """The first event of one of `kinds` at or after `since` (seconds since the epoch)."""
    return next((e for e in job.get("events", []) if e.get("type") in kinds and parse_time(e["time"]) >= since),
                None)


def loss_event(job, since):
    """The first event after `since` saying a rank was lost: a survivor's report (RankFailed) or
    the coordinator's lease (WorkerLost)."""
    return event_after(job, ("RankFailed", "WorkerLost"), since)


def parse_time(stamp):
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def network_cut(k):
    """`docker network disconnect` of a rank mid-collective: named within the lease, survivors
    abort within seconds, the job resumes live with the spare; on `connect` the worker rejoins."""
    def inject(job_id, victim, ranks):
        t0 = time.time()
        k.docker("network", "disconnect", k.cluster.network, k.cluster.container(victim))
        log(f"disconnected {victim}")
        job = k.cluster.wait_job(job_id, lambda j: loss_event(j, t0) is not None,
                                 timeout=60, what="a RankFailed or WorkerLost event")
        lost = loss_event(job, t0)
        named_after = parse_time(lost["time"]) - t0
        log(f"{lost['type']} after {named_after:.1f}s: {lost['message']}")
        k.expect(victim in lost["message"] or "rank 1" in lost["message"],
                 f"the {lost['type']} event does not name {victim} or rank 1: {lost['message']}")
        k.expect(named_after <= LEASE_S + 2 * HEARTBEAT_S,
                 f"the lost rank was named {named_after:.1f}s after the cut; the lease is {LEASE_S}s")
        job = k.cluster.wait_job(job_id, lambda j: int(j.get("generation", 0)) >= 2 and j.get("state") == "RUNNING"
                                 and int(j.get("progress", {}).get("step", 0)) > 0 and len(k.ranks(job_id, 2)) == 2,
                                 timeout=120, what="the second generation")
        resumed_after = time.time() - t0
        log(f"second generation running {resumed_after:.1f}s after the cut")
        k.expect(resumed_after < 60, f"the survivors took {resumed_after:.0f}s to resume (collective timeout?)")
        gen2 = k.ranks(job_id, 2)
        k.expect(victim not in gen2 and len(gen2) == 2, f"generation 2 ranks {gen2} should be the survivor and the spare")
        k.docker("network", "connect", "--alias", victim, k.cluster.network, k.cluster.container(victim))
        log(f"reconnected {victim}")
        k.cluster.wait_workers(3, timeout=90)
        log("the reconnected worker is back in the pool (3 registered)")
        cut.append(victim)

    cut = []
    job, _ = interrupted_job(k, inject)
    if job and cut:
        recovered_live(k, job, cut[0])


def established_to(pid, ip):
    """Established TCP connections in a process's network namespace to `ip` (IPv4)."""
    want = "".join(f"{int(p):02X}" for p in reversed(ip.split(".")))
    with open(f"/proc/{pid}/net/tcp") as f:
        next(f)
        return sum(1 for line in f if line.split()[3] == "01" and line.split()[2].split(":")[0] == want)


def rank_paused(k):
    """`docker pause` of a rank: its TCP connections stay open while it is frozen, and a
    Stalled event names that rank within a few heartbeats."""
    def inject(job_id, victim, ranks):
        survivor = next(w for w in ranks if w != victim)
        pid = k.docker("inspect", "-f", "{{.State.Pid}}", k.cluster.container(survivor)).strip()
        victim_ip = k.cluster.ip(victim)
        t0 = time.time()
        k.docker("pause", k.cluster.container(victim))
        log(f"paused {victim}")
        job = k.cluster.wait_job(job_id, lambda j: event_after(j, ("Stalled",), t0) is not None,
                                 timeout=60, what="a Stalled event")
        stalled = event_after(job, ("Stalled",), t0)
        after = parse_time(stalled["time"]) - t0
        log(f"Stalled after {after:.1f}s: {stalled['message']}")
        k.expect("rank 1" in stalled["message"] or victim in stalled["message"],
                 f"the Stalled event does not name rank 1 ({victim}): {stalled['message']}")
        k.expect(after <= STALL_S + 3 * HEARTBEAT_S, f"Stalled came {after:.1f}s after the pause")
        open_conns = established_to(pid, victim_ip)
        log(f"{survivor} holds {open_conns} established connections to the frozen {victim}")
        k.expect(open_conns > 0, f"{survivor} has no established connection to the frozen {victim}")
        k.docker("unpause", k.cluster.container(victim))
        log(f"unpaused {victim}")

    interrupted_job(k, inject)


def coordinator_replaced(k):
    """The coordinator's container killed and replaced by a new one on the same volumes: the
    running job continues by itself and ends as the uninterrupted run does."""
    def inject(job_id, victim, ranks):
        k.docker("kill", k.cluster.container("coordinator"))
        k.docker("rm", k.cluster.container("coordinator"))
        log("killed and removed the coordinator's container")
        k.cluster.start_coordinator()
        k.cluster.wait_healthy(["coordinator"])
        log("a new coordinator container is up on the same volumes")
        job = k.cluster.wait_job(job_id, lambda j: j.get("state") in ("RUNNING", "SUCCEEDED"), timeout=60,
                                 what="the job known to the new coordinator")
        k.expect(c.events(job, "CoordinatorRestarted"), "no CoordinatorRestarted event")

    # Longer than the other faults' jobs: training goes on while the coordinator is away, and
    # the job must still be running when the new one comes up to adopt it.
    job, _ = interrupted_job(k, inject, steps=240, at_step=80, checkpoint_every=20)
    if job:
        k.expect(int(job.get("restarts", 0)) == 0,
                 f"the job restarted {job.get('restarts')} times; it should have gone on by itself")
        adopted = c.events(job, "GenerationAdopted")
        if k.expect(adopted, "no GenerationAdopted event: the new coordinator did not adopt the running generation"):
            log(f"GenerationAdopted: {adopted[0]['message']}")


def sharded_spec(k, spec_path):
    """The spec at spec_path rewritten to train on `gradsync data prepare` shards of its corpus, whose
    val_*.bin shards the coordinator finds as the validation set, evaluated every 20 steps."""
    shards = os.path.join(k.cluster.data_dir, "shards")
    r = subprocess.run([os.path.join(k.args.build_dir, "bin", "gradsync"), "data", "prepare",
                        os.path.join(k.cluster.data_dir, "corpus.txt"), "-o", shards, "--val-fraction", "0.1"],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"gradsync data prepare failed ({r.returncode}):\n{r.stdout}\n{r.stderr[-3000:]}")
    with open(spec_path) as f:
        spec = json.load(f)
    spec["data"] = {"shards": {"paths": [os.path.join(shards, "train_*.bin")]}}
    spec["training"]["evalEvery"] = 20
    with open(spec_path, "w") as f:
        json.dump(spec, f, indent=2)
    return spec_path


def prometheus(k):
    """Prometheus in its container scrapes every service by DNS name, and every query of the
    Grafana dashboard returns data. The job trains on shards with a held-out set, so the loss
    panel's validation series is there too."""
    job_id = k.cluster.submit(sharded_spec(k, k.spec(world_size=3, steps=60, checkpoint_every=20)))
    k.cluster.wait_done(job_id)

    def query(expr):
        status, body = k.cluster.http("prometheus", 9090, "/api/v1/query?query=" + urllib.parse.quote(expr), "")
        return status, json.loads(body) if status == 200 else body

    deadline = time.time() + 90
    up = {}
    while time.time() < deadline:
        _, r = query("up")
        up = {f"{s['metric']['job']}/{s['metric']['instance']}": s["value"][1] for s in r["data"]["result"]}
        _, steps = query("count_over_time(gradsync_train_step[1m]) >= 3")
        if len(up) == 5 and all(v == "1" for v in up.values()) and steps["data"]["result"]:
            break
        time.sleep(2)
    log(f"targets: {up}")
    for target in ("coordinator:9465", "metrics:9464", "worker-0:9467", "worker-1:9467", "worker-2:9467"):
        hit = [v for t, v in up.items() if t.endswith("/" + target)]
        k.expect(hit == ["1"], f"Prometheus does not scrape {target} (up: {up})")
    with open(os.path.join(REPO, "services/metrics/monitoring/grafana/dashboards/gradsync-training.json")) as f:
        dashboard = json.load(f)
    queries = 0
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$training_job", ".+")
            status, r = query(expr)
            queries += 1
            # The GPU series come from workers on GPUs; these containers' workers run on the CPU.
            needs_gpu = "gradsync_gpu_" in expr and "vector(0)" not in expr
            k.expect(status == 200 and (needs_gpu or r["data"]["result"]),
                     f"panel \"{panel['title']}\" has no data: {expr} -> {r}")
    log(f"{queries} dashboard queries asked")
    k.expect(queries >= 31, f"only {queries} dashboard queries")
    # The images report the commit they were built from (the build context has no .git).
    head = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    _, info = query("gradsync_build_info")
    commits = {s["metric"]["job"]: s["metric"].get("commit", "") for s in info["data"]["result"]}
    log(f"commits: {commits}")
    k.expect(len(commits) == 3 and all(c and head.startswith(c) for c in commits.values()),
             f"images report commits {commits}, not {head}")


def compose(k):
    """docker/compose.yaml starts with the Compose this machine has (Debian's docker-compose 1.29,
    or Compose v2), everything but Grafana (whose image needs a registry), and runs a job on token
    shards put in its data directory (GRADSYNC_DATA_DIR), as docs/deployment.md's recipe says."""
    tool = compose_tool(k)
    if tool is None:
        log("SKIP: neither docker-compose nor `docker compose` is installed")
        sys.exit(77)
    subprocess.run(["sh", os.path.join(REPO, "docker", "make-tokens.sh")], check=True, capture_output=True)
    base = [*tool, "-p", "gs-compose", "-f", os.path.join(REPO, "docker", "compose.yaml")]
    data = os.path.join(k.cluster.dir, "compose-data")
    gradsync = os.path.join(k.args.build_dir, "bin", "gradsync")
    write_corpus(k.cluster.dir)
    subprocess.run([gradsync, "data", "prepare", os.path.join(k.cluster.dir, "corpus.txt"), "-o", os.path.join(data, "corpus"), "--val-fraction", "0.1"],
                   check=True, capture_output=True)
    env = dict(k.docker.env, GRADSYNC_TAG=k.args.tag, GRADSYNC_DATA_DIR=data)
    run = lambda *a, timeout=300: subprocess.run([*base, *a], env=env, capture_output=True, text=True,
                                                 timeout=timeout)
    services = ["coordinator", "metrics", "worker-0", "worker-1", "worker-2", "prometheus"]
    try:
        up = run("up", "-d", "--no-build", *services)
        if not k.expect(up.returncode == 0, f"{' '.join(tool)} up failed: {up.stdout}{up.stderr}"):
            return
        ids = run("ps", "-q").stdout.split()
        log(f"{' '.join(tool)}: {len(ids)} containers up")
        k.expect(len(ids) == len(services), f"{len(ids)} containers for {len(services)} services")
        spec = os.path.join(REPO, "examples", "jobs", "gpt-tiny-shards.yaml")
        deadline = time.time() + 120
        while time.time() < deadline:
            r = subprocess.run([gradsync, "submit", spec, "--address", "127.0.0.1:7070", "--token-file",
                                os.path.join(REPO, "docker", "secrets", "auth.token"),
                                "--set", 'data.shards.paths=["corpus/train_*.bin"]', "--set", "training.worldSize=3",
                                "--set", "training.epochs=0", "--set", "training.maxSteps=30",
                                "--set", "training.evalEvery=15", "--wait", "-o", "json"],
                               capture_output=True, text=True, timeout=600)
            if r.returncode == 0 or "SUCCEEDED" in r.stdout or time.time() > deadline - 5:
                break
            time.sleep(3)  # the coordinator may still be starting
        if k.expect(r.returncode == 0, f"the job on the compose cluster failed: {r.stdout[-2000:]}{r.stderr[-2000:]}"):
            summary = json.loads(r.stdout)
            log(f"a job ran on the compose cluster's data: {summary['state']}, "
                f"validation loss {summary.get('validationLoss')}")
            k.expect("validationLoss" in summary, f"the val_*.bin shards beside the data were not used: {summary}")
    finally:
        if k.failures:
            print(run("logs", "--tail", "30").stdout[-6000:])
        run("down", "-v", "--remove-orphans")


def nodes_script(k):
    """scripts/gradsync-nodes.sh with `docker exec` as its launcher, as on bare metal: the "nodes"
    are idle containers on the network (the coordinator image's for the coordinator's host,
    worker-cpu for node-0 and node-1) that share the state directory at one path. The script starts
    the coordinator there and a node agent with 2 CPU workers on each node; a 4-rank job succeeds
    with 2 ranks on each node; SIGTERM to the script stops it with status 0 and leaves nothing but
    the idle process in any container."""
    cl, docker = k.cluster, k.docker
    cl._write_tokens()  # <dir>/tokens/{auth,cluster,metrics}.token, owned by the images' user
    for sub in ("coordinator", "artifacts", "data"):
        os.makedirs(os.path.join(cl.dir, sub), exist_ok=True)
        os.chown(os.path.join(cl.dir, sub), c.UID, c.UID)
    docker("network", "create", "--driver", "bridge", cl.network)
    hosts = {"coordinator": "coordinator", "node-0": "worker-cpu", "node-1": "worker-cpu"}
    for role, image in hosts.items():
        docker("run", "-d", "--name", cl.container(role), "--hostname", role, "--network", cl.network,
               "--network-alias", role, "--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL",
               "--security-opt", "no-new-privileges:true", "-v", f"{cl.dir}:{cl.dir}",
               # A bare host runs no image's health probe: one caught running would read as a
               # process the script left behind.
               "--no-healthcheck", "--entrypoint", "sleep", f"gradsync/{image}:{k.args.tag}", "infinity")
        cl.started.append(role)
    nodes = [cl.container("node-0"), cl.container("node-1")]
    script = subprocess.Popen(
        ["bash", os.path.join(REPO, "scripts", "gradsync-nodes.sh"), "--nodes", ",".join(nodes),
         "--coordinator-host", cl.container("coordinator"), "--launcher", f"{docker.client} exec",
         "--state-dir", cl.dir, "--data-root", cl.data_dir, "--cpu-workers", "2", "--no-metrics",
         "--name", cl.prefix],
        env=docker.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not os.path.exists(os.path.join(cl.dir, "cluster.env")):
            k.expect(script.poll() is None, f"gradsync-nodes.sh ended ({script.returncode}) before it was up")
            if script.poll() is not None:
                return
            time.sleep(0.5)
        cl.wait_workers(4)
        log("the script is up: 4 workers registered from 2 nodes")
        job_id = cl.submit(k.spec(world_size=4, steps=30))
        job = cl.wait_done(job_id)
        k.expect(int(job["result"].get("worldSize", 0)) == 4, f"world size {job['result'].get('worldSize')}, not 4")
        for node in nodes:
            with open(os.path.join(cl.dir, "logs", f"agent-{node}.log")) as f:
                text = f.read()
            ranks = text.count(f" of job {job_id} generation 1")
            k.expect(ranks == 2, f"{node}'s agent ran {ranks} ranks of {job_id}, not 2:\n{text[-2000:]}")
    finally:
        script.terminate()
        try:
            out, _ = script.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            script.kill()
            out, _ = script.communicate()
        log(f"gradsync-nodes.sh:\n{out[-2000:]}")
    k.expect(script.returncode == 0, f"gradsync-nodes.sh exited {script.returncode} after SIGTERM")
    for role in hosts:
        left = [line for line in docker("top", cl.container(role)).splitlines()[1:] if "sleep" not in line]
        k.expect(not left, f"{role} still runs {left} after the script stopped")


def make_service_certificate(tls_dir, name):
    """The guide's openssl recipe (docs/deployment.md, section 3), for a certificate that names only
    the Service `name`: a CA of its own, and the server's key and certificate."""
    os.makedirs(tls_dir, exist_ok=True)
    run = lambda *a: subprocess.run(a, cwd=tls_dir, check=True, capture_output=True)  # noqa: E731
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=gradsync-ca",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        "-keyout", "ca.key", "-out", "ca.crt")
    run("openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
        "-keyout", "tls.key", "-out", "tls.csr")
    with open(os.path.join(tls_dir, "ext.cnf"), "w") as f:
        f.write(f"extendedKeyUsage = serverAuth\nsubjectAltName = DNS:{name}\n")
    run("openssl", "x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "2", "-extfile", "ext.cnf", "-out", "tls.crt")
    for f in os.listdir(tls_dir):
        os.chown(os.path.join(tls_dir, f), c.UID, c.UID)
        os.chmod(os.path.join(tls_dir, f), 0o644 if f.endswith(".crt") else 0o600)


def tls_names(k):
    """The guide's TLS flow on containers. The coordinator serves gRPC and HTTPS REST with a
    certificate that names its Service alone (gradsync-coordinator, as the chart's does), and is
    dialled at its address, as through a port-forward to 127.0.0.1. Workers verify the Service's
    name with GRADSYNC_TLS_SERVER_NAME and train a job; the CLI on this host is refused with advice
    without --tls-server-name, and submits, follows and reads the job with it, over gRPC and HTTPS."""
    cl = k.cluster
    service = "gradsync-coordinator"
    cl.down(quiet=True)
    os.makedirs(cl.data_dir, exist_ok=True)
    tls_dir = os.path.join(cl.dir, "tls")
    make_service_certificate(tls_dir, service)
    cl._write_tokens()
    cl.docker("network", "create", "--driver", "bridge", cl.network)
    for volume in c.VOLUMES:
        cl.docker("volume", "create", f"{cl.prefix}-{volume}")
    cl.start_coordinator(env={"GRADSYNC_TLS_CERT_FILE": "/run/tls/tls.crt", "GRADSYNC_TLS_KEY_FILE": "/run/tls/tls.key"},
                         mounts=[f"{tls_dir}:/run/tls:ro"], docker_args=["--network-alias", service])
    cl.start_metrics()
    for w in cl.workers[:2]:
        cl.start_worker(w, env={"GRADSYNC_TLS_CA_FILE": "/run/tls/ca.crt", "GRADSYNC_TLS_SERVER_NAME": service},
                        mounts=[f"{tls_dir}:/run/tls:ro"])
    cl.wait_workers(2)
    log("2 workers registered over TLS, verifying the coordinator as " + service)

    ip = cl.ip("coordinator")
    gradsync = os.path.join(k.args.build_dir, "bin", "gradsync")
    tls = ["--token-file", cl.tokens["auth"], "--tls-ca", os.path.join(tls_dir, "ca.crt")]
    spec = k.spec(world_size=2, steps=20)

    def cli(*args):
        return subprocess.run([gradsync, *args], capture_output=True, text=True, timeout=300)

    refused = cli("submit", spec, "--address", f"{ip}:7070", *tls)
    k.expect(refused.returncode != 0, f"a submit verifying {ip} against a certificate for {service} succeeded")
    k.expect("--tls-server-name" in refused.stderr, f"the refusal gives no advice: {refused.stderr.strip()}")
    submitted = cli("submit", spec, "--address", f"{ip}:7070", "--tls-server-name", service, *tls, "-o", "name")
    if not k.expect(submitted.returncode == 0, f"submit with --tls-server-name failed: {submitted.stderr.strip()}"):
        return
    job = submitted.stdout.strip()
    watched = cli("watch", job, "--address", f"{ip}:7070", "--tls-server-name", service, *tls)
    k.expect(watched.returncode == 0, f"watch over TLS: exit {watched.returncode}: {watched.stderr.strip()[-500:]}")
    env_named = subprocess.run([gradsync, "get", job, "-o", "json", "--address", f"https://{ip}:8080", *tls],
                               capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, GRADSYNC_TLS_SERVER_NAME=service))
    k.expect(env_named.returncode == 0, f"get over HTTPS with GRADSYNC_TLS_SERVER_NAME: {env_named.stderr.strip()}")
    if env_named.returncode == 0:
        state = json.loads(env_named.stdout).get("state")
        k.expect(state == "SUCCEEDED", f"the job ended {state}")
        log(f"{job} {state}: submitted, watched and read over gRPC and HTTPS as {service}")


def compose_tool(k):
    """Compose v2 (`docker compose`) where the client has it, else Debian's docker-compose."""
    if subprocess.run([k.docker.client, "compose", "version"], capture_output=True).returncode == 0:
        return [k.docker.client, "compose"]
    path = shutil.which("docker-compose")
    return [path] if path else None


CHECKS = {"across-hosts": across_hosts, "rank-killed": rank_killed, "network-cut": network_cut,
          "rank-paused": rank_paused, "coordinator-replaced": coordinator_replaced, "prometheus": prometheus,
          "compose": compose, "nodes-script": nodes_script, "tls-names": tls_names, **slurm_checks.CHECKS}
# Checks that bring up their own containers instead of the standard cluster.
OWN_CLUSTER = ("compose", "nodes-script", "tls-names", *slurm_checks.CHECKS)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("check", choices=sorted(CHECKS))
    p.add_argument("--build-dir", required=True, help="the CMake build directory (for the local reference runs)")
    p.add_argument("--tag", default="dev")
    p.add_argument("--keep", action="store_true", help="leave the cluster running afterwards")
    p.add_argument("--coordinator-arg", action="append", default=[],
                   help="an extra coordinator flag, e.g. --lease-timeout-ms=60000 to see a check fail")
    p.add_argument("--worker-docker-arg", action="append", default=[],
                   help="an extra `docker run` option for the workers, e.g. --ipc=host to see across-hosts fail")
    p.add_argument("--spec", action="append", default=[], metavar="PATH=VALUE",
                   help="set a field of the checks' jobs, e.g. training.maxRestarts=0 to see rank-killed fail")
    args = p.parse_args()
    if os.environ.get("GRADSYNC_CLUSTER_TESTS") == "0":
        print("SKIP: GRADSYNC_CLUSTER_TESTS=0")
        return 77
    try:
        k = Check(args)
    except (subprocess.CalledProcessError, FileNotFoundError) as e:
        print(f"SKIP: no Docker engine: {e}")
        return 77
    started = time.time()
    try:
        if args.check not in OWN_CLUSTER:
            log(f"{args.check}: bringing up the cluster")
            k.cluster.up()
        CHECKS[args.check](k)
    except AssertionError as e:
        k.failures.append(str(e))
    finally:
        if k.failures:
            for role in k.cluster.started:
                print(f"---- last lines of {role}\n{k.cluster.logs(role)[-2500:]}")
        if not args.keep:
            k.cluster.down()
    for f in k.failures:
        print(f"FAIL: {f}")
    print(f"{args.check}: {'FAILED' if k.failures else 'passed'} in {time.time() - started:.0f}s")
    return 1 if k.failures else 0


if __name__ == "__main__":
    sys.exit(main())

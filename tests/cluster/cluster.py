"""A gradsync cluster of containers on a private bridge network, for the checks in
check_cluster.py: a coordinator, a metrics service, Prometheus and CPU workers, each its own host
(own address, hostname, /dev/shm and root filesystem), with the state and checkpoints on volumes.

Every container of one Cluster is named `<prefix>-<role>` and answers on the network under its
role (`coordinator`, `metrics`, `prometheus`, `worker-0`...), the names the project's
configuration uses (services/metrics/monitoring/prometheus.yml, docker/compose.yaml)."""
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

UID = 10001  # the images' user (docker/Dockerfile)
TOKENS = ("auth", "cluster", "metrics")
VOLUMES = ("state", "checkpoints", "prometheus")


class Docker:
    """The docker client against the engine scripts/docker-engine.sh started or found."""

    def __init__(self, repo):
        engine = os.path.join(repo, "scripts", "docker-engine.sh")
        out = subprocess.run(["bash", engine, "start"], check=True, capture_output=True, text=True).stdout
        self.env = dict(os.environ, DOCKER_HOST=out.strip().split("=", 1)[1])
        self.client = subprocess.run(["bash", engine, "client"], check=True, capture_output=True,
                                     text=True).stdout.strip()

    def __call__(self, *args, check=True, timeout=120):
        r = subprocess.run([self.client, *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"docker {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
        return r.stdout

    def has_image(self, image):
        return self("image", "inspect", image, check=False) != ""


class Cluster:
    def __init__(self, docker, prefix, tag="dev", workers=3, coordinator_args=(), worker_docker_args=()):
        self.docker = docker
        self.coordinator_args = list(coordinator_args)
        self.worker_docker_args = list(worker_docker_args)
        self.prefix = prefix
        self.tag = tag
        self.workers = [f"worker-{i}" for i in range(workers)]
        self.network = f"{prefix}-net"
        self.dir = tempfile.mkdtemp(prefix=f"gradsync-{prefix}-")
        os.chmod(self.dir, 0o755)
        self.data_dir = os.path.join(self.dir, "data")
        self.tokens = {}
        self.started = []

    # ---- bring-up and tear-down ------------------------------------------------------------
    def up(self):
        self.down(quiet=True)
        os.makedirs(self.data_dir, exist_ok=True)
        self._write_tokens()
        self.docker("network", "create", "--driver", "bridge", self.network)
        for volume in VOLUMES:
            self.docker("volume", "create", f"{self.prefix}-{volume}")
        self.start_coordinator()
        self.start_metrics()
        self.start_prometheus()
        for w in self.workers:
            self.start_worker(w)
        self.wait_healthy(["coordinator", "metrics", *self.workers])
        self.wait_workers(len(self.workers))

    def down(self, quiet=False):
        names = self.docker("ps", "-aq", "--filter", f"name=^{self.prefix}-", check=False).split()
        if names:
            self.docker("rm", "-f", "-v", *names, check=False)
        self.docker("network", "rm", self.network, check=False)
        for volume in VOLUMES:
            self.docker("volume", "rm", "-f", f"{self.prefix}-{volume}", check=False)
        if not quiet:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _write_tokens(self):
        tokens = os.path.join(self.dir, "tokens")
        os.makedirs(tokens, exist_ok=True)
        for name in TOKENS:
            path = os.path.join(tokens, f"{name}.token")
            with open(path, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
            os.chmod(path, 0o600)
            os.chown(path, UID, UID)
            self.tokens[name] = path

    def token(self, name):
        with open(self.tokens[name]) as f:
            return f.read().strip()

    # ---- the services ------------------------------------------------------------------------
    def container(self, role):
        return f"{self.prefix}-{role}"

    def _run(self, role, image, env, mounts, args=(), docker_args=()):
        """Starts a container as a gradsync service does in compose: read-only root, no
        capabilities, the secrets it needs mounted read-only under /run/secrets."""
        cmd = ["run", "-d", "--name", self.container(role), "--hostname", role,
               "--network", self.network, "--network-alias", role,
               "--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL",
               "--security-opt", "no-new-privileges:true", "--init=false"]
        for k, v in env.items():
            cmd += ["-e", f"{k}={v}"]
        for m in mounts:
            cmd += ["-v", m]
        self.docker(*cmd, *docker_args, image, *args)
        self.started.append(role)

    def _secret(self, name, target=None):
        return f"{self.tokens[name]}:{target or '/run/secrets/' + name + '_token'}:ro"

    def start_coordinator(self, role="coordinator", env=None, mounts=None, docker_args=()):
        """`env`, `mounts` and `docker_args` come on top of the standard ones (TLS, say)."""
        env = {"GRADSYNC_AUTH_TOKEN_FILE": "/run/secrets/auth_token",
               "GRADSYNC_CLUSTER_TOKEN_FILE": "/run/secrets/cluster_token",
               "GRADSYNC_METRICS_TOKEN_FILE": "/run/secrets/metrics_token",
               "GRADSYNC_DATA_ROOT": self.data_dir, **(env or {})}
        mounts = [f"{self.prefix}-state:/var/lib/gradsync/state",
                  f"{self.prefix}-checkpoints:/var/lib/gradsync/checkpoints",
                  f"{self.data_dir}:{self.data_dir}:ro",
                  self._secret("auth"), self._secret("cluster"), self._secret("metrics"), *(mounts or [])]
        self._run(role, f"gradsync/coordinator:{self.tag}", env, mounts, self.coordinator_args, docker_args)

    def start_metrics(self):
        env = {"GRADSYNC_CLUSTER_TOKEN_FILE": "/run/secrets/cluster_token",
               "GRADSYNC_METRICS_TOKEN_FILE": "/run/secrets/metrics_token"}
        self._run("metrics", f"gradsync/metrics:{self.tag}", env, [self._secret("cluster"), self._secret("metrics")])

    def start_prometheus(self):
        self._run("prometheus", f"gradsync/prometheus:{self.tag}", {},
                  [f"{self.prefix}-prometheus:/var/lib/gradsync/prometheus",
                   self._secret("metrics", "/etc/prometheus/metrics.token")])

    def start_worker(self, role, env=None, mounts=None):
        env = {"GRADSYNC_COORDINATOR": "coordinator:7070", "GRADSYNC_METRICS": "metrics:7071",
               "GRADSYNC_COMM_HOST": role, "GRADSYNC_WORKER_NAME": role,
               "GRADSYNC_CLUSTER_TOKEN_FILE": "/run/secrets/cluster_token",
               "GRADSYNC_METRICS_TOKEN_FILE": "/run/secrets/metrics_token", **(env or {})}
        mounts = [f"{self.prefix}-checkpoints:/var/lib/gradsync/checkpoints",
                  f"{self.data_dir}:{self.data_dir}:ro",
                  self._secret("cluster"), self._secret("metrics"), *(mounts or [])]
        # As in Compose and Kubernetes, a worker that exits with a failure (the abort watchdog's
        # status 70) is started again.
        self._run(role, f"gradsync/worker-cpu:{self.tag}", env, mounts,
                  docker_args=["--restart", "on-failure"] + self.worker_docker_args)

    # ---- looking at it -----------------------------------------------------------------------
    def ip(self, role):
        out = self.docker("inspect", "-f", "{{json .NetworkSettings.Networks}}", self.container(role))
        return json.loads(out)[self.network]["IPAddress"]

    def logs(self, role):
        r = subprocess.run([self.docker.client, "logs", self.container(role)], env=self.docker.env,
                           capture_output=True, text=True, timeout=60)
        return r.stdout + r.stderr

    def health(self, role):
        out = self.docker("inspect", "-f", "{{.State.Health.Status}}", self.container(role), check=False)
        return out.strip()

    def wait_healthy(self, roles, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            states = {r: self.health(r) for r in roles}
            if all(s == "healthy" for s in states.values()):
                return
            time.sleep(1)
        raise AssertionError(f"not healthy within {timeout}s: {states}\n" +
                             "\n".join(f"--- {r}\n{self.logs(r)[-3000:]}" for r, s in states.items() if s != "healthy"))

    def http(self, role, port, path, token, method="GET", body=None, timeout=10):
        req = urllib.request.Request(f"http://{self.ip(role)}:{port}{path}", method=method, data=body,
                                     headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metric(self, role, port, name, labels=""):
        """The sum of a metric's samples on a service's /metrics whose labels contain `labels`."""
        status, text = self.http(role, port, "/metrics", self.token("metrics"))
        if status != 200:
            raise AssertionError(f"{role}:{port}/metrics answered {status}: {text[:300]}")
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                if labels in line:
                    total += float(line.rsplit(" ", 1)[1])
        return total

    def registered_workers(self):
        return self.metric("coordinator", 9465, "gradsync_workers")

    def wait_workers(self, n, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if self.registered_workers() >= n:
                    return
            except (OSError, AssertionError):
                pass
            time.sleep(0.5)
        raise AssertionError(f"{n} workers did not register within {timeout}s")

    # ---- jobs --------------------------------------------------------------------------------
    def submit(self, spec_path):
        """Submits through the CLI image, as a user on the network would; returns the job id."""
        spec_in = "/job/" + os.path.basename(spec_path)
        r = subprocess.run(
            [self.docker.client, "run", "--rm", "--network", self.network,
             "-v", f"{spec_path}:{spec_in}:ro", "-v", self._secret("auth", "/run/secrets/auth_token"),
             f"gradsync/cli:{self.tag}", "submit", spec_in, "--address", "coordinator:7070",
             "--token-file", "/run/secrets/auth_token", "-o", "json"],
            env=self.docker.env, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError(f"gradsync submit failed ({r.returncode}): {r.stdout}{r.stderr}")
        return json.loads(r.stdout)["id"]

    def job(self, job_id):
        status, body = self.http("coordinator", 8080, f"/v1/jobs/{job_id}", self.token("auth"))
        if status != 200:
            raise AssertionError(f"GET /v1/jobs/{job_id}: {status} {body[:300]}")
        return json.loads(body)

    def wait_job(self, job_id, until, timeout=600, what="the job"):
        """Polls the job until `until(job)` holds; fails with the job's events otherwise."""
        deadline = time.time() + timeout
        job = {}
        while time.time() < deadline:
            try:
                job = self.job(job_id)
            except (OSError, AssertionError):
                time.sleep(1)  # the coordinator may be restarting
                continue
            if until(job):
                return job
            if job.get("state") in ("FAILED", "CANCELLED") and not until(job):
                break
            time.sleep(0.5)
        raise AssertionError(f"{what}: not reached within {timeout}s; job is {job.get('state')}:\n" +
                             describe_events(job))

    def wait_done(self, job_id, timeout=600):
        job = self.wait_job(job_id, lambda j: j.get("state") in ("SUCCEEDED", "FAILED", "CANCELLED"), timeout)
        if job["state"] != "SUCCEEDED":
            raise AssertionError(f"job {job_id} ended {job['state']}: {job.get('stateReason')}\n" +
                                 describe_events(job))
        return job

    def artifacts_get(self, job_id, path, dest_dir, address="coordinator:7070"):
        """`gradsync artifacts get JOB PATH -o DEST_DIR` through the CLI image, as a user on the
        network would (address: gRPC host:port or http://host:port); returns its stdout, the
        `sha256  file` line of sha256sum, with the file's path inside the CLI's container."""
        os.makedirs(dest_dir, exist_ok=True)
        os.chown(dest_dir, UID, UID)
        r = subprocess.run(
            [self.docker.client, "run", "--rm", "--network", self.network, "-v", f"{dest_dir}:/out",
             "-v", self._secret("auth", "/run/secrets/auth_token"), f"gradsync/cli:{self.tag}",
             "artifacts", "get", job_id, path, "-o", "/out", "--address", address,
             "--token-file", "/run/secrets/auth_token"],
            env=self.docker.env, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise AssertionError(f"gradsync artifacts get {job_id} {path} over {address} failed "
                                 f"({r.returncode}): {r.stdout}{r.stderr}")
        return r.stdout

    def copy_out(self, role, path, dest):
        self.docker("cp", f"{self.container(role)}:{path}", dest)


def describe_events(job):
    return "\n".join(f"  {e.get('time')} {e.get('type')}: {e.get('message')}" for e in job.get("events", []))


def events(job, kind):
    return [e for e in job.get("events", []) if e.get("type") == kind]

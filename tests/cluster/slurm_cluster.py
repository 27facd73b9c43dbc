"""A Slurm cluster of containers for the Slurm checks (slurm_checks.py): one controller
(slurmctld), compute nodes (slurmd) and a login host, all from the image gradsync/slurm
(docker/Dockerfile, target slurm), with MUNGE keyed alike on every host and a host directory
mounted at the same path everywhere as the shared file system. Jobs are submitted with the real
sbatch from the login host as the user gradsync, watched with squeue and scontrol, and stopped
with scancel; the checks read gradsync's own jobs from its coordinator's REST API."""
import json
import os
import re
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

UID = 10001  # the user gradsync in the image, who submits the jobs

# The configuration of a cluster without accounting (no slurmdbd: sacct has nothing to read, so
# the checks read jobs with scontrol) or cgroups (processes are tracked by their parents, as
# containers allow), and a node declared dead 10 s after its slurmd stops answering.
SLURM_CONF = """\
ClusterName=gradsync
SlurmctldHost=slurmctld
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SlurmdParameters=config_overrides
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=10
KillWait=30
MinJobAge=600
InactiveLimit=0
SlurmctldDebug=info
SlurmdDebug=info
NodeName={nodes} CPUs=2 RealMemory=1024 State=UNKNOWN
PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


class SlurmCluster:
    def __init__(self, docker, prefix, tag="dev", nodes=2):
        self.docker = docker
        self.prefix = prefix
        self.image = f"gradsync/slurm:{tag}"
        self.network = f"{prefix}-net"
        self.nodes = [f"node{i}" for i in range(1, nodes + 1)]
        self.dir = tempfile.mkdtemp(prefix=f"gradsync-{prefix}-")  # the shared file system
        os.chmod(self.dir, 0o755)
        os.chown(self.dir, UID, UID)
        self.data_dir = os.path.join(self.dir, "data")
        self.started = []

    # ---- bring-up and tear-down ------------------------------------------------------------
    def up(self, timeout=90):
        self.down(quiet=True)
        os.makedirs(self.data_dir, exist_ok=True)
        os.chown(self.data_dir, UID, UID)
        conf = os.path.join(self.dir, "slurm.conf")
        with open(conf, "w") as f:
            f.write(SLURM_CONF.format(nodes=",".join(self.nodes)))
        key = os.path.join(self.dir, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self.docker("network", "create", "--driver", "bridge", self.network)
        self._run("slurmctld", "controller")
        for node in self.nodes:
            self._run(node, "node")
        self._run("login", "login")
        self.wait_idle(len(self.nodes), timeout)

    def _run(self, host, role):
        # --init reaps what slurmd's job steps leave; the shared directory is at the same path on
        # every host, as a cluster's home or Lustre is.
        self.docker("run", "-d", "--name", self.container(host), "--hostname", host, "--network", self.network,
                    "--network-alias", host, "--init", "--no-healthcheck", "--user", "0",
                    "-v", f"{os.path.join(self.dir, 'slurm.conf')}:/etc/slurm/slurm.conf:ro",
                    "-v", f"{os.path.join(self.dir, 'munge.key')}:/run/secrets/munge.key:ro",
                    "-v", f"{self.dir}:{self.dir}", self.image, role)
        self.started.append(host)

    def down(self, quiet=False):
        names = self.docker("ps", "-aq", "--filter", f"name=^{self.prefix}-", check=False).split()
        if names:
            self.docker("rm", "-f", "-v", *names, check=False)
        self.docker("network", "rm", self.network, check=False)
        if not quiet:
            subprocess.run(["rm", "-rf", "--one-file-system", self.dir], check=False)

    def container(self, host):
        return f"{self.prefix}-{host}"

    def logs(self, host):
        r = subprocess.run([self.docker.client, "logs", self.container(host)], env=self.docker.env,
                           capture_output=True, text=True, timeout=60)
        return r.stdout + r.stderr

    # ---- Slurm's own commands ------------------------------------------------------------------
    def exec(self, host, *cmd, user="gradsync", cwd=None, check=True, timeout=60):
        args = ["exec", "-u", user]
        if cwd:
            args += ["-w", cwd]
        r = subprocess.run([self.docker.client, *args, self.container(host), *cmd], env=self.docker.env,
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} on {host} exited {r.returncode}: {r.stdout}{r.stderr}")
        return r

    def wait_idle(self, n, timeout):
        deadline = time.time() + timeout
        out = ""
        while time.time() < deadline:
            out = self.exec("slurmctld", "sinfo", "-h", "-N", "-o", "%N %T", check=False).stdout
            if sum(1 for line in out.splitlines() if line.split()[-1:] == ["idle"]) >= n:
                return
            time.sleep(1)
        raise AssertionError(f"{n} Slurm nodes not idle within {timeout}s; sinfo says:\n{out}\n" +
                             "\n".join(f"--- {h}\n{self.logs(h)[-1500:]}" for h in ["slurmctld", *self.nodes]))

    def sbatch(self, *args, cwd=None):
        """`sbatch --parsable ARGS...` from the login host as gradsync; returns the Slurm job id."""
        r = self.exec("login", "sbatch", "--parsable", *args, cwd=cwd or self.dir)
        return r.stdout.strip().split(";")[0]

    def scancel(self, job, *args):
        self.exec("login", "scancel", *args, job)

    def job(self, job):
        """scontrol's record of a Slurm job, as a dict of its Key=Value fields."""
        out = self.exec("login", "scontrol", "-o", "show", "job", job).stdout
        return dict(re.findall(r"(\w+)=(\S*)", out))

    def squeue(self):
        return self.exec("login", "squeue", "-h", "-o", "%i %T %N").stdout

    def wait_slurm_job(self, job, states, timeout):
        """Waits until the Slurm job is in one of `states` (scontrol's JobState); returns its record."""
        deadline = time.time() + timeout
        record = {}
        while time.time() < deadline:
            record = self.job(job)
            if record.get("JobState") in states:
                return record
            time.sleep(1)
        raise AssertionError(f"Slurm job {job} not {'/'.join(states)} within {timeout}s: {record.get('JobState')} "
                             f"({record.get('Reason')}); squeue:\n{self.squeue()}")

    # ---- gradsync's coordinator, on the batch host -------------------------------------------
    def ip(self, host):
        out = self.docker("inspect", "-f", "{{json .NetworkSettings.Networks}}", self.container(host))
        return json.loads(out)[self.network]["IPAddress"]

    def gradsync_jobs(self, state_dir, host):
        """The jobs of the coordinator a run or cluster with this state directory runs on `host`."""
        with open(os.path.join(state_dir, "tokens", "auth.token")) as f:
            token = f.read().strip()
        req = urllib.request.Request(f"http://{self.ip(host)}:8080/v1/jobs",
                                     headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read().decode()).get("jobs", [])

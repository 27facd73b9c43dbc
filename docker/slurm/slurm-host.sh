#!/bin/sh
# One host of a Slurm cluster in a container (docker/Dockerfile, target slurm):
#
#   slurm-host.sh controller     slurmctld, in the foreground
#   slurm-host.sh node           slurmd, in the foreground, as the node named by the hostname
#   slurm-host.sh login          nothing but MUNGE: a host to run sbatch, squeue, scancel and gradsync from
#
# Every role runs munged first, with the cluster's key from /run/secrets/munge.key (the same file
# on every host). The cluster's configuration is /etc/slurm/slurm.conf, mounted read-only.
set -eu

role="${1:-node}"
[ "$(id -u)" = 0 ] || { echo "slurm-host: Slurm's daemons and MUNGE run as root: start this container with --user 0" >&2; exit 2; }
key="${GRADSYNC_MUNGE_KEY:-/run/secrets/munge.key}"
[ -s "$key" ] || { echo "slurm-host: no MUNGE key at $key (mount the cluster's key there)" >&2; exit 2; }
[ -s /etc/slurm/slurm.conf ] || { echo "slurm-host: no /etc/slurm/slurm.conf (mount the cluster's)" >&2; exit 2; }

install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
install -o munge -g munge -m 0400 "$key" /etc/munge/munge.key
runuser -u munge -- /usr/sbin/munged

case "$role" in
  controller)
    install -d -o slurm -g slurm -m 0755 /var/spool/slurmctld
    exec /usr/sbin/slurmctld -D -i
    ;;
  node)
    install -d -m 0755 /var/spool/slurmd
    exec /usr/sbin/slurmd -D -N "$(hostname)"
    ;;
  login)
    exec sleep infinity
    ;;
  *)
    echo "slurm-host: unknown role $role (controller, node or login)" >&2
    exit 2
    ;;
esac

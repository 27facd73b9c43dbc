#!/usr/bin/env bash
# A Docker engine for the image builds and the container tests, on machines with or without one.
#
#   scripts/docker-engine.sh start   print DOCKER_HOST=... for a working engine, starting one if needed
#   scripts/docker-engine.sh stop    stop the engine that `start` started (none other), once idle
#   scripts/docker-engine.sh client  print the docker client to use
#
# `start` uses the engine the environment already reaches (DOCKER_HOST, or the default socket).
# Where none answers, as on a machine without systemd, it starts Debian's dockerd by hand with its
# own data root, exec root and socket under GRADSYNC_DOCKER_ROOT (default /var/tmp/gradsync-docker),
# installing docker.io first when it is missing. The images and the build cache stay there between
# runs. Needs root to start an engine.
set -euo pipefail

root="${GRADSYNC_DOCKER_ROOT:-/var/tmp/gradsync-docker}"
socket="unix://$root/docker.sock"

# Debian's client (20.10) talks to BuildKit itself; a newer client without the buildx plugin
# cannot build with BuildKit, and RUN --mount needs it.
client() {
  if [ -x /usr/bin/docker ]; then echo /usr/bin/docker; else command -v docker; fi
}

answers() {
  DOCKER_HOST="$1" timeout 10 "$(client)" info > /dev/null 2>&1
}

install_engine() {
  command -v dockerd > /dev/null && [ -x /usr/bin/docker ] && return 0
  echo "docker-engine: installing docker.io" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends docker.io > /dev/null \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends docker.io > /dev/null; }
}

start() {
  if [ -n "${DOCKER_HOST:-}" ] && answers "$DOCKER_HOST"; then echo "DOCKER_HOST=$DOCKER_HOST"; return 0; fi
  if answers unix:///var/run/docker.sock; then echo "DOCKER_HOST=unix:///var/run/docker.sock"; return 0; fi
  if answers "$socket"; then echo "DOCKER_HOST=$socket"; return 0; fi
  [ "$(id -u)" -eq 0 ] || { echo "docker-engine: no engine answers, and starting one needs root" >&2; return 1; }
  install_engine
  mkdir -p "$root"
  echo "docker-engine: starting dockerd (data in $root/data, log $root/dockerd.log)" >&2
  # setsid: the daemon outlives this script and the test that started it.
  setsid dockerd --data-root "$root/data" --exec-root "$root/exec" -H "$socket" \
    --pidfile "$root/dockerd.pid" > "$root/dockerd.log" 2>&1 < /dev/null &
  for _ in $(seq 60); do
    if answers "$socket"; then echo "DOCKER_HOST=$socket"; return 0; fi
    sleep 1
  done
  tail -n 20 "$root/dockerd.log" >&2
  echo "docker-engine: dockerd did not answer within 60 s" >&2
  return 1
}

stop() {
  local pid
  pid="$(cat "$root/dockerd.pid" 2>/dev/null || true)"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  # Containers still running belong to someone else's run: leave the engine to them.
  if [ -n "$(DOCKER_HOST="$socket" "$(client)" ps -q 2>/dev/null)" ]; then
    echo "docker-engine: containers are running; dockerd left running" >&2
    return 0
  fi
  kill "$pid"
  for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || return 0; sleep 1; done
  kill -9 "$pid" 2>/dev/null || true
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  client) client ;;
  *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac

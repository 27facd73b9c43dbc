#!/usr/bin/env bash
# Runs the quick start as a newcomer would, on a fresh Debian 12: a minimal bookworm made by
# debootstrap, with only what a C++ machine ships (g++, cmake, make, git, python3, GoogleTest,
# GoogleMock, Google Benchmark) and stock CMake, the repository cloned from HEAD, then
# `make test` and `make demo` inside it.
#
#   scripts/fresh-machine-check.sh [--cuda auto|on|off] [--binaries-out DIR] [--ccache DIR]
#                                  [--base DIR] [--apt-cache DIR] [BUILD_DIR]
#
#   --cuda auto   bind the CUDA toolkit (/usr/local/cuda) in when the host has one (default)
#   --cuda on     bind it in, fail when the host has none
#   --cuda off    a machine without the toolkit
#   --base-only   make (or keep) the base system and stop
#   --binaries-out DIR
#                 once both pass, stage the binaries the images need into DIR
#                 (docker/stage-binaries.sh, with DIR/revision the commit tested): a CPU build
#                 on the images' own distribution, which scripts/images.sh --binaries takes
#   --ccache DIR  the compiler cache the build uses (cmake/GradsyncCcache.cmake compiles through
#                 ccache, which install-deps.sh installs), bound in at the same path: the host's
#                 builds with the same cache (~/.cache/ccache by default) find the chroot's
#                 objects, and the chroot finds theirs; each checkout's paths are rewritten
#                 relative to it, so two checkouts share one cache
#   --base DIR    where the debootstrapped base lives (default BUILD_DIR/fresh-machine/base);
#                 outside the build directory, a clean clone reuses it too
#   --apt-cache DIR
#                 bound in as the chroot's /var/cache/apt/archives, so that the packages the
#                 quick start installs are downloaded once and installed from there later
#
# The base system (debootstrap with the packages above, nothing else) is reused by later runs;
# each run works on a copy of it, so every run starts from the same clean base.
# The repository is cloned inside at the host checkout's own path, so that the compiler sees the
# same paths in both places (a shared compiler cache hits only then).
# Every mount is undone on exit, also on failure or interruption. Needs root (chroot, mount) and
# debootstrap (installed from Debian when missing). The mirror is the one this machine's apt uses.
set -euo pipefail

cuda=auto
base_only=0
binaries_out=""
ccache_dir=""
base=""
apt_cache=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) cuda="${2:?--cuda needs auto, on or off}"; shift 2 ;;
    --cuda=*) cuda="${1#--cuda=}"; shift ;;
    --base-only) base_only=1; shift ;;
    --binaries-out) binaries_out="${2:?--binaries-out needs a directory}"; shift 2 ;;
    --ccache) ccache_dir="${2:?--ccache needs a directory}"; shift 2 ;;
    --base) base="${2:?--base needs a directory}"; shift 2 ;;
    --apt-cache) apt_cache="${2:?--apt-cache needs a directory}"; shift 2 ;;
    -h|--help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fresh-machine-check: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
case "$cuda" in auto|on|off) ;; *) echo "fresh-machine-check: --cuda must be auto, on or off, not '$cuda'" >&2; exit 2 ;; esac

repo="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="$(mkdir -p "${1:-$repo/build}" && cd "${1:-$repo/build}" && pwd)"
top="$build_dir/fresh-machine"
base="${base:-$top/base}"
root="$top/run"
log="$top/run.log"
packages="g++,cmake,make,git,python3,libgtest-dev,libgmock-dev,libbenchmark-dev"

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh-machine-check: needs root (debootstrap, chroot, mount)" >&2
  exit 2
fi

cuda_dir=""
if [ "$cuda" != off ] && [ -d /usr/local/cuda ]; then cuda_dir="$(readlink -f /usr/local/cuda)"; fi
if [ "$cuda" = on ] && [ -z "$cuda_dir" ]; then
  echo "fresh-machine-check: --cuda on, but this machine has no /usr/local/cuda" >&2
  exit 2
fi

# Unmounts everything below $1, deepest first; lazily when a mount is still busy.
if [ -n "$binaries_out" ]; then
  if [ -n "$cuda_dir" ]; then
    echo "fresh-machine-check: --binaries-out stages the CPU images' binaries and needs --cuda off" >&2
    exit 2
  fi
  binaries_out="$(mkdir -p "$binaries_out" && cd "$binaries_out" && pwd)"
fi

if [ -n "$ccache_dir" ]; then ccache_dir="$(mkdir -p "$ccache_dir" && cd "$ccache_dir" && pwd)"; fi
if [ -n "$apt_cache" ]; then apt_cache="$(mkdir -p "$apt_cache/partial" && cd "$apt_cache" && pwd)"; fi
mkdir -p "$(dirname "$base")"
base="$(cd "$(dirname "$base")" && pwd)/$(basename "$base")"
src="$repo"  # the clone's path inside the chroot

unmount_below() {
  local dir="$1" m
  [ -d "$dir" ] || return 0
  while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done < <(awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r)
}

# Kills the processes whose root is $1 (a test's leftover server would keep mounts busy).
kill_inside() {
  local dir="$1" p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$dir" ] && kill -9 "${p#/proc/}" 2>/dev/null || true
  done
}

# Undoes mount_run: everything below the run's root, then the root's own bind mount.
unmount_run() {
  unmount_below "$root"
  if mountpoint -q "$root" 2>/dev/null; then umount "$root" 2>/dev/null || umount -l "$root" 2>/dev/null || true; fi
}

cleanup() {
  kill_inside "$root"
  unmount_run
}
trap cleanup EXIT
trap 'exit 130' INT TERM

make_base() {
  # The marker names the packages the base was made with: a base of another list is made again.
  if [ "$(cat "$base/.gradsync-base" 2>/dev/null)" = "$packages" ]; then
    echo "fresh-machine-check: reusing the base in $base"
    return 0
  fi
  if ! command -v debootstrap > /dev/null; then
    echo "fresh-machine-check: installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap > /dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap > /dev/null; }
  fi
  local from
  from="$(bash "$repo/scripts/debian-mirror.sh")"
  echo "fresh-machine-check: debootstrap bookworm from $from into $base"
  unmount_below "$base"
  rm -rf --one-file-system "$base"
  debootstrap --variant=minbase --include="$packages" bookworm "$base" "$from" > "$top/debootstrap.log" 2>&1 \
    || { tail -n 30 "$top/debootstrap.log"; echo "fresh-machine-check: debootstrap failed" >&2; return 1; }
  # The same suites as this machine (updates and security too), as a newcomer's machine has them.
  if ls /etc/apt/sources.list.d/*.sources > /dev/null 2>&1; then
    rm -f "$base/etc/apt/sources.list"
    cp /etc/apt/sources.list.d/*.sources "$base/etc/apt/sources.list.d/"
  fi
  chroot "$base" apt-get clean
  echo "$packages" > "$base/.gradsync-base"
}

# A fresh copy of the base with the repository's HEAD cloned into $src.
prepare_run() {
  unmount_run
  rm -rf --one-file-system "$root"
  cp -a "$base" "$root"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # The machine's trust anchors, as the network it is on needs them (an intercepting proxy's CA
  # among them): the certificates added locally, which Debian's ca-certificates adds to the bundle
  # when a package pulls it in, and the bundle itself until then.
  if [ -d /usr/local/share/ca-certificates ]; then
    mkdir -p "$root/usr/local/share/ca-certificates" "$root/etc/ssl/certs"
    cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
    [ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  fi
  # debootstrap writes no /etc/hosts; Debian's installer (and every container runtime) does, and
  # without it `localhost` does not resolve.
  if [ ! -s "$root/etc/hosts" ]; then
    printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\nff02::1\t\tip6-allnodes\nff02::2\t\tip6-allrouters\n' \
      > "$root/etc/hosts"
  fi
  # No service starts inside the chroot (docker.io's postinst would start a second dockerd on
  # the host's kernel), as in Debian's own build chroots.
  printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  mkdir -p "$(dirname "$root$src")"
  git clone -q --no-hardlinks "$repo" "$root$src"
  echo "fresh-machine-check: testing $(git -C "$root$src" log --oneline -1) in $src"
}

mount_run() {
  # The root a mount point of its own, as on any machine or container: a process there can then
  # make its mounts private in a namespace of its own (mount --make-rprivate /), which the
  # comm tests' rank with a /dev/shm of its own does.
  mount --bind "$root" "$root"
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
  mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
  if [ -n "$cuda_dir" ]; then
    mkdir -p "$root/usr/local/cuda"
    mount --bind "$cuda_dir" "$root/usr/local/cuda"
    mount -o remount,bind,ro "$root/usr/local/cuda"
    echo "fresh-machine-check: CUDA toolkit $cuda_dir bound in (read-only)"
  else
    echo "fresh-machine-check: no CUDA toolkit"
  fi
  if [ -n "$ccache_dir" ]; then
    mkdir -p "$root$ccache_dir"
    mount --bind "$ccache_dir" "$root$ccache_dir"
    echo "fresh-machine-check: compiler cache $ccache_dir bound in"
  fi
  if [ -n "$apt_cache" ]; then
    mount --bind "$apt_cache" "$root/var/cache/apt/archives"
  fi
}

# The quick start's environment: a login's, plus the compiler cache's when --ccache asks for one.
quick_start_env() {
  printf '%s\n' HOME=/root TERM=dumb LANG=C.UTF-8 GRADSYNC_CLUSTER_TESTS=0 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  if [ -n "$ccache_dir" ]; then echo "CCACHE_DIR=$ccache_dir"; fi
}

run_quick_start() {
  local status=0
  # In the background, so that a TERM or INT reaches this script at once (bash runs traps only
  # between commands, and `wait` is one); the clean-up then kills what runs inside.
  # GRADSYNC_CLUSTER_TESTS=0: a chroot cannot host a container engine (it would share the host's
  # kernel, bridge and iptables with the host's own); CI runs the cluster checks on the host.
  local env_vars
  mapfile -t env_vars < <(quick_start_env)
  chroot "$root" /usr/bin/env -i "${env_vars[@]}" \
    bash -c "cd '$src' && make test && make demo" > "$log" 2>&1 &
  wait $! || status=$?
  if [ "$status" -ne 0 ]; then
    tail -n 80 "$log"
    echo "fresh-machine-check: FAILED (exit $status); the whole log is $log" >&2
    return "$status"
  fi
  grep -E "tests passed|tests failed" "$log" || true
  echo "fresh-machine-check: make test and make demo passed on a fresh Debian 12 ($( [ -n "$cuda_dir" ] && echo "with" || echo "without") CUDA); log: $log"
}

# The binaries the images take (--binaries-out), from the build just tested: CPU only, which the
# images are, so not from a run with the CUDA toolkit bound in.
stage_binaries() {
  rm -rf "$root/tmp/image-binaries"
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    bash "$src/docker/stage-binaries.sh" "$src/build" /tmp/image-binaries
  git -C "$root$src" rev-parse HEAD > "$root/tmp/image-binaries/revision"
  mkdir -p "$binaries_out"
  rm -rf "${binaries_out:?}"/*
  cp -a "$root/tmp/image-binaries/." "$binaries_out/"
  echo "fresh-machine-check: the images' binaries are staged in $binaries_out"
}

mkdir -p "$top"
make_base
[ "$base_only" -eq 1 ] && exit 0
prepare_run
mount_run
run_quick_start
if [ -n "$binaries_out" ]; then stage_binaries; fi

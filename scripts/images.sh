#!/usr/bin/env bash
# Builds the CPU images of docker/Dockerfile (coordinator, metrics, worker-cpu, cli, prometheus, slurm), offline if
# need be: the images users get, from the same Dockerfile and install scripts.
#
#   scripts/images.sh [--tag TAG] [--binaries DIR] [TARGET...]     (make images)
#
# --binaries DIR (or GRADSYNC_IMAGE_BINARIES=DIR): take the binaries from DIR, staged by
# docker/stage-binaries.sh from a CPU build of this very commit on Debian 12, instead of compiling
# them in the Dockerfile's build stage (docker/prebuilt/README.md). DIR/revision must name the
# commit checked out here, with nothing changed since; otherwise the images compile their own.
# Tags each as gradsync/TARGET:TAG (default `dev`, the tag docker/compose.yaml runs). The Debian
# base the Dockerfile names (ARG DEBIAN_IMAGE) is used when the engine has it, pulled when a
# registry answers, and otherwise made here: `debootstrap --variant=minbase bookworm` from this
# machine's apt mirror, imported under the same tag. The engine is scripts/docker-engine.sh's.
# The CUDA worker (docker/Dockerfile.cuda) needs NVIDIA's CUDA base image and is not built here.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
tag=dev
binaries="${GRADSYNC_IMAGE_BINARIES:-}"
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="${2:?--tag needs a value}"; shift 2 ;;
    --binaries) binaries="${2:?--binaries needs a directory}"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "images: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(coordinator metrics worker-cpu cli prometheus slurm)

export "$(bash "$repo/scripts/docker-engine.sh" start)"
docker="$(bash "$repo/scripts/docker-engine.sh" client)"
work="${GRADSYNC_DOCKER_ROOT:-/var/tmp/gradsync-docker}"
mkdir -p "$work"
base="$(sed -n 's/^ARG DEBIAN_IMAGE=//p' "$repo/docker/Dockerfile")"
started=$SECONDS

say() { echo "images: [$((SECONDS - started))s] $*"; }

# A minimal bookworm with the same apt suites as this machine (updates and security, as the
# registry's image has them), imported as $base.
import_base() {
  local rootfs="$work/base-rootfs" mirror
  command -v debootstrap > /dev/null \
    || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap > /dev/null
  mirror="$(bash "$repo/scripts/debian-mirror.sh")"
  say "no registry has $base: debootstrap bookworm from $mirror"
  rm -rf --one-file-system "$rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" > "$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log"; echo "images: debootstrap failed" >&2; return 1; }
  if ls /etc/apt/sources.list.d/*.sources > /dev/null 2>&1; then
    rm -f "$rootfs/etc/apt/sources.list"
    cp /etc/apt/sources.list.d/*.sources "$rootfs/etc/apt/sources.list.d/"
  fi
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
  tar -C "$rootfs" -c . | "$docker" import --change 'CMD ["bash"]' - "$base" > /dev/null
  rm -rf --one-file-system "$rootfs"
  say "imported $base"
}

ensure_base() {
  if "$docker" image inspect "$base" > /dev/null 2>&1; then return 0; fi
  if timeout 60 "$docker" pull -q "$base" > /dev/null 2>&1; then say "pulled $base"; return 0; fi
  import_base
}

# The build context: one snapshot of the tree (tracked files and untracked ones git does not
# ignore) for every target, so that all images come from the same sources and the build stage is
# built once, even while the tree changes.
snapshot() {
  context="$work/context"
  revision="$(git -C "$repo" rev-parse HEAD 2>/dev/null || true)"
  rm -rf "$context"
  mkdir -p "$context"
  if git -C "$repo" rev-parse --git-dir > /dev/null 2>&1; then
    (cd "$repo" && git ls-files -z --cached --others --exclude-standard \
       | xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh \
       | tar -c --null -T - -f -) | tar -C "$context" -x -f -
  else
    context="$repo"
  fi
}

# Lays DIR (--binaries) into the context when it holds this commit's binaries; says why not.
use_binaries() {
  local dir="$1" staged b
  for b in gradsync gradsync-coordinator gradsync-metrics gradsync-worker; do
    [ -x "$dir/bin/$b" ] || { say "$dir has no bin/$b; compiling the binaries instead"; return 0; }
  done
  staged="$(cat "$dir/revision" 2>/dev/null || true)"
  if [ -z "$revision" ] || [ "$staged" != "$revision" ]; then
    say "the binaries in $dir are of commit '${staged}', this tree is at '${revision}'; compiling them instead"
    return 0
  fi
  if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    say "this tree has changes the binaries in $dir lack; compiling them instead"
    return 0
  fi
  mkdir -p "$context/docker/prebuilt"
  cp -a "$dir/." "$context/docker/prebuilt/"
  from=prebuilt
  say "the binaries come from $dir (commit $revision)"
}

build() {
  local target="$1" log="$work/build-$1.log"
  say "building gradsync/$target:$tag (log: $log)"
  if ! DOCKER_BUILDKIT=1 "$docker" build --progress=plain -f "$context/docker/Dockerfile" --target "$target" \
      --build-arg REVISION="$revision" --build-arg BINARIES="$from" \
      -t "gradsync/$target:$tag" "$context" > "$log" 2>&1; then
    tail -n 40 "$log"
    echo "images: building $target failed; the whole log is $log" >&2
    return 1
  fi
}

ensure_base
snapshot
from=build
if [ -n "$binaries" ]; then use_binaries "$binaries"; fi
# The targets at once: each waits mostly on apt inside its own container, and BuildKit shares
# the stages they have in common (runtime, the binaries).
pids=()
for t in "${targets[@]}"; do build "$t" & pids+=($!); done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[ "$failed" -eq 0 ] || exit 1
say "built: $(printf 'gradsync/%s:'"$tag"' ' "${targets[@]}")"

#!/usr/bin/env bash
# The runtime packages of the images, derived from the binaries themselves so that the list can
# never drift from what the build linked (and so that one script serves Debian and Ubuntu, whose
# library package names differ).
#
#   runtime-deps.sh BINARY...      the packages owning the shared libraries BINARY links, one a line
#   runtime-deps.sh --missing FILE the packages listed in FILE that are not installed here
#
# The build stage runs the first form; the runtime stage installs what the second prints, so it
# never reinstalls or upgrades what its base image already has (NVIDIA's CUDA libraries included).
# The driver libraries (libcuda, libnvidia-ml) are left out: the NVIDIA container runtime
# mounts them from the host.
set -euo pipefail

usage() {
  echo "usage: runtime-deps.sh BINARY... | runtime-deps.sh --missing FILE" >&2
  exit 2
}

[ $# -gt 0 ] || usage

if [ "$1" = "--missing" ]; then
  [ $# -eq 2 ] || usage
  while read -r pkg; do
    [ -n "$pkg" ] || continue
    # shellcheck disable=SC2016 # ${Status} is dpkg-query's field, not a shell variable
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done < "$2"
  exit 0
fi

# soname and resolved path of each library the binaries link directly (their NEEDED entries);
# apt brings in what those libraries need in turn.
needed=$(for binary in "$@"; do readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'; done | sort -u)
mapfile -t libraries < <(ldd "$@" | awk -v needed="$needed" '
  BEGIN { n = split(needed, names, "\n"); for (i = 1; i <= n; i++) direct[names[i]] = 1 }
  $2 == "=>" && ($1 in direct) { print $1, $3 }' | sort -u)

# ldd may name /lib/... where dpkg recorded /usr/lib/... (merged /usr), or an alternatives
# symlink: each library is looked up under every spelling of its path, all in one dpkg query.
spellings() {
  local path=$1 real
  real=$(readlink -f "$path")
  printf '%s\n' "$path" "$real" "/usr$path" "${path#/usr}" "/usr$real" "${real#/usr}"
}
candidates=()
for entry in "${libraries[@]}"; do
  read -r soname path <<< "$entry"
  [ "$path" = "not" ] || mapfile -t -O "${#candidates[@]}" candidates < <(spellings "$path")
done
declare -A owner_of
while IFS= read -r line; do
  case "$line" in diversion*) continue ;; esac
  pkg=${line%%: /*}
  pkg=${pkg%%,*}
  owner_of[${line#*: }]=${pkg%%:*}
done < <(dpkg-query -S "${candidates[@]}" 2>/dev/null || true)

failed=0
packages=()
for entry in "${libraries[@]}"; do
  read -r soname path <<< "$entry"
  case "$soname" in
    libcuda.so.* | libnvidia-ml.so.*) continue ;;
  esac
  if [ "$path" = "not" ]; then
    echo "runtime-deps: $soname is not found" >&2
    failed=1
    continue
  fi
  pkg=""
  while read -r candidate; do
    pkg=${owner_of[$candidate]:-}
    [ -z "$pkg" ] || break
  done < <(spellings "$path")
  if [ -z "$pkg" ]; then
    echo "runtime-deps: no package owns $path ($soname)" >&2
    failed=1
    continue
  fi
  packages+=("$pkg")
done
[ "$failed" -eq 0 ] || exit 1
printf '%s\n' "${packages[@]}" | sort -u


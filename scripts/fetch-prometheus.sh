#!/bin/sh
# Makes promtool available without installing Prometheus: unpacks Debian's prometheus package
# (not its web-UI dependencies) into DIR. Idempotent: does nothing when DIR already holds it.
# Prints the path of promtool; exits non-zero (saying why on stderr) when it cannot be had.
#
#   scripts/fetch-prometheus.sh build/third_party/prometheus
set -eu

dir=${1:?usage: fetch-prometheus.sh DIR}
tool="$dir/usr/bin/promtool"

if [ ! -x "$tool" ]; then
  mkdir -p "$dir"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if ! (cd "$tmp" && apt-get download prometheus >"$tmp/log" 2>&1); then
    echo "fetch-prometheus: 'apt-get download prometheus' failed (offline, or run apt-get update):" >&2
    cat "$tmp/log" >&2
    exit 1
  fi
  dpkg -x "$tmp"/prometheus_*.deb "$tmp/root"
  mkdir -p "$dir/usr/bin"
  # promtool and prometheus only: the rest of the package (web assets, docs) is not needed.
  # Copy then rename, so a concurrent caller never sees a half-written binary.
  for bin in prometheus promtool; do
    cp "$tmp/root/usr/bin/$bin" "$dir/usr/bin/.$bin.$$"
    mv -f "$dir/usr/bin/.$bin.$$" "$dir/usr/bin/$bin"
  done
fi
echo "$tool"

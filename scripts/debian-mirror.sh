#!/usr/bin/env bash
# Prints the Debian mirror this machine's apt uses for bookworm's main component: the first
# deb822 source that is not the security archive, else the first one-line `deb` source.
set -euo pipefail
uri="$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null \
       | grep -v -- '-security' | head -n 1 || true)"
if [ -z "$uri" ]; then
  uri="$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\([^[:space:]]*\)[[:space:]]\+bookworm[[:space:]].*/\2/p' \
         /etc/apt/sources.list 2>/dev/null | head -n 1 || true)"
fi
[ -n "$uri" ] || { echo "no Debian mirror in /etc/apt sources" >&2; exit 1; }
echo "$uri"

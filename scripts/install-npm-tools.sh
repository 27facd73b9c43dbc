#!/usr/bin/env bash
# Installs the npm packages the tests use as references (package-lock.json pins each):
# tests/deploy/k8s-schemas (the Kubernetes and prometheus-operator schemas),
# tests/tokenizer/reference (gpt-3-encoder, js-tiktoken and @huggingface/tokenizers) and tests/openapi
# (@redocly/cli, the OpenAPI linter). Node.js and npm come from Debian where the machine has
# neither. Quiet and quick when everything is in place.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

if ! command -v npm > /dev/null; then
  echo "install-npm-tools: installing nodejs npm"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -qq --no-install-recommends nodejs npm > /dev/null \
    || { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends nodejs npm > /dev/null; }
fi

# Node.js trusts its own roots only; the system's bundle adds the CAs installed on this machine
# (a proxy's, say), as every other tool here trusts them.
if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
fi

for dir in tests/deploy/k8s-schemas tests/tokenizer/reference tests/openapi; do
  lock="$repo/$dir/package-lock.json"
  stamp="$repo/$dir/node_modules/.package-lock.json"
  # npm ci writes node_modules/.package-lock.json; it is current when newer than the lock file.
  if [ -f "$stamp" ] && [ "$stamp" -nt "$lock" ]; then continue; fi
  echo "install-npm-tools: npm ci in $dir"
  npm ci --prefix "$repo/$dir" --no-audit --no-fund --loglevel=error > /dev/null
done

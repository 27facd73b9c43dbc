#!/usr/bin/env bash
# openapi.lint: the coordinator's OpenAPI description (as print_openapi prints it) through Redocly
# CLI's recommended rules, offline. Exits 77 (skipped) when Node.js or the packages of
# package-lock.json are missing (scripts/install-npm-tools.sh installs them).
set -euo pipefail
printer="$1"
here="$(cd "$(dirname "$0")" && pwd)"
redocly="$here/node_modules/.bin/redocly"
if ! command -v node > /dev/null || [ ! -x "$redocly" ]; then
  echo "SKIP: Node.js or @redocly/cli is missing (scripts/install-npm-tools.sh)"
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$printer" > "$work/openapi.json"
cp "$here/redocly.yaml" "$work/"
cd "$work"
# No telemetry and no update check: the lint runs where nothing can be reached.
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true "$redocly" lint openapi.json --format=stylish

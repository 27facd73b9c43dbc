#!/usr/bin/env bash
# CTest fixture of the cluster checks: builds the images they run (scripts/images.sh). Where no
# Docker engine can be had (not root, or no engine starts, as inside a chroot) it says so and
# succeeds, and the checks then skip; a failed image build fails.
set -uo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
if [ "${GRADSYNC_CLUSTER_TESTS:-1}" = 0 ]; then
  echo "SKIP: GRADSYNC_CLUSTER_TESTS=0"
  exit 0
fi
if ! bash "$repo/scripts/docker-engine.sh" start > /dev/null; then
  echo "SKIP: no Docker engine here; the cluster checks will skip"
  exit 0
fi
exec bash "$repo/scripts/images.sh" --tag "${1:-dev}"

#!/usr/bin/env bash
# Prints the tests of the host's build that ran nowhere in this CI run: neither in the fresh
# machine's `make test` (its log) nor among the host's labels. Exits 1 when there is one, so that
# a test that exists only in the CUDA build and lacks the `cuda` label fails CI instead of
# silently never running. Then lists the tests the fresh machine skipped that the host does not
# run either, so that a skip that loses a check shows in every run.
#
#   .ci/unrun-tests.sh CHROOT_LOG BUILD_DIR HOST_LABELS
set -euo pipefail
log="${1:?usage: .ci/unrun-tests.sh CHROOT_LOG BUILD_DIR HOST_LABELS}" build="${2:?}" labels="${3:?}"
# `ctest -N` writes Testing/Temporary/LastTest.log too: keep the real run's log as it was.
last="$build/Testing/Temporary/LastTest.log"
if [ -f "$last" ]; then
  kept="$(mktemp)"
  cp "$last" "$kept"
  trap 'cp "$kept" "$last"; rm -f "$kept"' EXIT
fi
names() { sed -n -E 's/^ *Test +#[0-9]+: ([^ ]+)$/\1/p'; }
ran_in_chroot="$(sed -n -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .*/\1/p' "$log" | sort -u)"
on_host="$(cd "$build" && ctest -N -L "$labels" | names | sort -u)"
unrun="$(cd "$build" && ctest -N | names | sort -u \
  | comm -23 - <(printf '%s\n%s\n' "$ran_in_chroot" "$on_host" | sort -u))"
if [ -n "$unrun" ]; then
  echo "unrun-tests: these tests of the CUDA build ran nowhere; label them (cuda, or another label .ci/run runs):"
  printf '  %s\n' $unrun
  exit 1
fi
skipped="$(sed -n -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .*\*\*\*Skipped.*/\1/p' "$log" | sort -u)"
if [ -n "$skipped" ]; then
  echo "unrun-tests: skipped in the fresh machine (each says why in its log), and not run on the host:"
  comm -23 <(echo "$skipped") <(echo "$on_host") | sed 's/^/  /'
fi
count() { printf '%s' "$1" | grep -c . || true; }
echo "unrun-tests: every test of the host's build ran: $(count "$ran_in_chroot") in the fresh machine, $(count "$on_host") on the host"

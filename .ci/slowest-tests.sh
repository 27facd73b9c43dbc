#!/usr/bin/env bash
# Prints the N slowest tests of CTest logs, slowest first: seconds, outcome, test, and the log's
# name. Reads the lines ctest prints as each test ends ("  12/980 Test  #34: name ....   Passed
# 1.23 sec"); a log that is missing is passed over.
#
#   .ci/slowest-tests.sh N NAME=LOG [NAME=LOG...]
set -euo pipefail
n="${1:?usage: .ci/slowest-tests.sh N NAME=LOG...}"
shift
for named in "$@"; do
  name="${named%%=*}" log="${named#*=}"
  [ -f "$log" ] || continue
  sed -n -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.*[ *]*([A-Za-z][A-Za-z ]*[A-Za-z]) +([0-9.]+) sec$/\3\t\2\t\1/p' "$log" \
    | awk -F'\t' -v name="$name" '{ printf "%8.1f s  %-8s %s  (%s)\n", $1, $2, $3, name }'
done | sort -rn | awk -v n="$n" 'NR <= n'  # reads to the end: `head` would leave sort a broken pipe

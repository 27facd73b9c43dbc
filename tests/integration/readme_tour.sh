#!/usr/bin/env bash
# The README's first hour ("**The CLI**" block), run command by command as a newcomer would, on a
# fresh local cluster: every command must succeed, in order. The block's placeholders are made
# real: /tmp/gs a fresh directory, jobs/mlp-1a2b3 the job the first submit printed.
# usage: readme_tour.sh SOURCE_DIR BIN_DIR
set -uo pipefail
source_dir=$1
bin_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-tour-XXXXXX")
mkdir -p "$work/tmp" "$work/config"
ln -s "$source_dir/examples" "$work/examples"
export PATH="$bin_dir:$PATH" TMPDIR="$work/tmp" GRADSYNC_CONFIG_DIR="$work/config"
cleanup() {
  gradsync local down --state-dir "$work/gs" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

block=$(awk '/^\*\*The CLI\*\*/ {found = 1; next} found && /^```sh$/ {inside = 1; next}
             inside && /^```$/ {exit} inside {print}' "$source_dir/README.md")
if [[ -z $block ]]; then
  echo "no **The CLI** block in README.md" >&2
  exit 1
fi

cd "$work" || exit 1
job=""
n=0
while IFS= read -r line; do
  command=$(sed -E 's/[[:space:]]+# .*$//' <<<"$line")
  [[ -z $command ]] && continue
  command=${command//\/tmp\/gs/$work/gs}
  if [[ $command == *jobs/mlp-1a2b3* ]]; then
    [[ -n $job ]] || { echo "the tour names jobs/mlp-1a2b3 before any submit printed a job" >&2; exit 1; }
    command=${command//jobs\/mlp-1a2b3/$job}
  fi
  n=$((n + 1))
  echo "[$n] \$ $command"
  out=$(bash -c "$command" 2>"$work/stderr" </dev/null)
  code=$?
  printf '%s\n' "$out" | head -20
  if ((code != 0)); then
    echo "FAILED (exit $code): $command" >&2
    cat "$work/stderr" >&2
    gradsync local down --state-dir "$work/gs" >/dev/null 2>&1
    tail -30 "$work"/gs/logs/*.log 2>/dev/null >&2
    exit 1
  fi
  if [[ -z $job && $command == "gradsync submit "* ]]; then
    job=$(grep -o '^jobs/[^ ]*' <<<"$out" | head -1)
  fi
done <<<"$block"

# The names the README's map from other tools gives are fields a spec takes.
map=$(awk '/^\*\*Coming from torchrun/ {found = 1} found && /^\| / {print} found && /^$/ && seen {exit} /^\| there/ {seen = 1}' \
  "$source_dir/README.md")
fields=$(grep -o '`\(model\|training\|ddp\|data\|checkpoint\)\.[A-Za-z.]*[`=]' <<<"$map" | tr -d '`=' | sort -u)
if (($(wc -l <<<"$fields") < 8)); then
  echo "the README's map from torchrun, DDP, FSDP and Hugging Face names too few fields:" $fields >&2
  exit 1
fi
for field in $fields; do
  # An empty value leaves the field unset: only an unknown name is refused (exit 2) before the
  # unreachable address is dialled.
  gradsync submit "$source_dir/examples/jobs/demo.yaml" --set "$field=" --address 127.0.0.1:1 >/dev/null 2>"$work/stderr"
  if (($? == 2)); then
    echo "the README's map names $field, which a spec does not take:" >&2
    cat "$work/stderr" >&2
    exit 1
  fi
done

# What the tour says it leaves: the picture, the data of the curve read after the cluster was
# down, the weights fetched through the API.
for f in loss.svg loss.csv results/weights.bin; do
  [[ -s $work/$f ]] || { echo "the tour left no $f" >&2; exit 1; }
done
grep -q '<svg' "$work/loss.svg" || { echo "loss.svg is no SVG" >&2; exit 1; }
echo "the README's tour: $n commands, each succeeded; its map's $(wc -l <<<"$fields") fields are a spec's"

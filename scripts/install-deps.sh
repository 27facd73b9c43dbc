#!/usr/bin/env bash
# Installs the Debian packages gradsync builds and tests with, only those missing.
# Idempotent: when everything is present it returns at once without touching apt.
# CUDA and NCCL are not Debian packages here; the build finds them under /usr/local/cuda.
#
#   scripts/install-deps.sh           what `make test` needs: the build and every test's tools
#   scripts/install-deps.sh --build   only what building the binaries needs (the image builds)
set -euo pipefail

build_packages=(
  build-essential cmake pkg-config
  ccache  # cmake/GradsyncCcache.cmake: every checkout compiles through one cache in ~/.cache/ccache
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev prometheus-cpp-dev libgloo-dev libopenblas-dev libsqlite3-dev
  libyaml-cpp-dev libcpp-httplib-dev libcurl4-openssl-dev libssl-dev
  libyaml-dev  # libs/spec: the spec's nesting, anchors and tags from libyaml's events, before yaml-cpp parses
  libxxhash-dev  # libs/ckpt: XXH3-64 checksums of checkpoint and weights files
  libsentencepiece-dev  # libs/tokenizer's SentencePiece plugin (optional: the build goes on without it)
  python3-dev pybind11-dev  # python/: the gradsync Python package's extension (gradsync._native)
)
test_packages=(
  libgtest-dev libgmock-dev libbenchmark-dev
  openssl  # the integration tests make their TLS certificates with the openssl CLI
  clang libclang-rt-14-dev  # scripts/fuzz.sh: clang++ with libFuzzer and the sanitizers' runtimes
  golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v2-dev
  yamllint python3-yaml python3-jsonschema
  sentencepiece  # tests/tokenizer: spm_train and spm_encode, the SentencePiece reference
  xxhash  # tests/ckpt: xxhsum, the XXH3 reference the checksums are checked against
  docker.io docker-compose debootstrap  # tests/cluster: the engine, Compose, and a base image offline
  python3-torch  # script jobs and the PyTorch comparisons: torch 1.13 (CPU) and torchrun, under /usr/bin/python3
)

case "${1:-}" in
  --build) packages=("${build_packages[@]}") ;;
  "") packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *) echo "install-deps: unknown option $1 (--build installs only what the binaries need)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"

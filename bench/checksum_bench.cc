// gradsync-checksum-bench: the checkpoint checksums' throughput on this machine, XXH3-64 (what
// gradsync writes) against FNV-1a (what it wrote before and still verifies). One process, one
// thread: the rate a rank has for hashing its part while writing it, or for verifying it.
//
//   memory  a buffer of --mib MiB of pseudo-random bytes fed to ckpt::StreamingChecksum in 1 MiB
//           pieces, as the writers feed it; best and median of --iters passes.
//   verify  with --dir: one checkpoint part of --mib MiB written there (WriteRankPart, which
//           hashes while writing and fsyncs), then VerifyCheckpoint (read the part back and hash
//           it, from the page cache) against a manifest digest of each algorithm.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/ckpt/checksum.h"
#include "gradsync/core/rng.h"

namespace {

using gradsync::ckpt::ChecksumAlgorithm;
using gradsync::ckpt::ChecksumName;
using gradsync::ckpt::StreamingChecksum;

constexpr char kUsage[] = "usage: gradsync-checksum-bench [--mib 512] [--iters 5] [--dir DIR]\n";
constexpr size_t kPiece = 1 << 20;
constexpr ChecksumAlgorithm kAlgorithms[] = {ChecksumAlgorithm::kXxh3_64, ChecksumAlgorithm::kFnv1a64};

struct Options {
  int mib = 512;
  int iters = 5;
  std::string dir;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "%s\n%s", message.c_str(), kUsage);
  return 2;
}

bool ParseOptions(int argc, char** argv, Options* o, std::string* error) {
  for (int i = 1; i < argc; i += 2) {
    const std::string name = argv[i];
    if (i + 1 >= argc) {
      *error = name + ": missing value";
      return false;
    }
    const std::string value = argv[i + 1];
    if (name == "--dir") {
      o->dir = value;
    } else if (name == "--mib" || name == "--iters") {
      int* field = name == "--mib" ? &o->mib : &o->iters;
      if (!absl::SimpleAtoi(value, field) || *field < 1 || *field > (name == "--mib" ? 16384 : 1000)) {
        *error = name + ": expected a positive integer (at most 16384 MiB, 1000 passes), got \"" + value + "\"";
        return false;
      }
    } else {
      *error = "unknown option " + name;
      return false;
    }
  }
  return true;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

struct Timing {
  double best = 0;
  double median = 0;
};

Timing Summarise(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  return {seconds.front(), seconds[seconds.size() / 2]};
}

void PrintRow(const char* what, ChecksumAlgorithm a, double bytes, Timing t) {
  std::printf("%-8s %-8s %9.1f ms %8.2f GB/s %9.1f ms %8.2f GB/s\n", what, ChecksumName(a), t.best * 1e3,
              bytes / t.best / 1e9, t.median * 1e3, bytes / t.median / 1e9);
}

void MemoryCase(const Options& o) {
  std::vector<char> data(static_cast<size_t>(o.mib) << 20);
  gradsync::Rng rng(1);
  for (size_t i = 0; i < data.size(); i += sizeof(uint64_t)) {
    const uint64_t v = rng.NextU64();
    std::memcpy(data.data() + i, &v, sizeof(v));
  }
  for (ChecksumAlgorithm a : kAlgorithms) {
    std::vector<double> seconds;
    uint64_t value = 0;
    for (int i = 0; i < o.iters; ++i) {
      const auto start = std::chrono::steady_clock::now();
      StreamingChecksum sum(a);
      for (size_t at = 0; at < data.size(); at += kPiece) {
        sum.Update(std::as_bytes(std::span(data.data() + at, std::min(kPiece, data.size() - at))));
      }
      value = sum.Value();
      seconds.push_back(Seconds(start));
    }
    PrintRow("memory", a, static_cast<double>(data.size()), Summarise(seconds));
    std::printf("         %s\n", gradsync::ckpt::FormatDigest(a, value).c_str());
  }
}

std::string FileDigest(const std::string& path, ChecksumAlgorithm a) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(kPiece);
  StreamingChecksum sum(a);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    sum.Update(std::as_bytes(std::span(buf.data(), static_cast<size_t>(in.gcount()))));
  }
  return sum.Digest();
}

int VerifyCase(const Options& o) {
  namespace ckpt = gradsync::ckpt;
  const std::string dir = ckpt::CheckpointDir(o.dir, 1);
  ckpt::RankState state;
  const int64_t floats = static_cast<int64_t>(o.mib) << 18;  // 4-byte values
  state.layout.Add("w", {floats}, true);
  state.params.resize(static_cast<size_t>(floats));
  gradsync::Rng rng(2);
  for (float& v : state.params) v = static_cast<float>(rng.NextU64() >> 40);

  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<gradsync::v1::CheckpointPart> part = ckpt::WriteRankPart(dir, state);
  const double write_seconds = Seconds(start);
  if (!part.ok()) return Fail(std::string(part.status().message()));
  const double bytes = static_cast<double>(part->bytes());
  std::printf("write    %-8s %9.1f ms %8.2f GB/s (one pass: hashing, writing and fsync of %s)\n",
              ChecksumName(ckpt::kWriteChecksum), write_seconds * 1e3, bytes / write_seconds / 1e9,
              part->file().c_str());

  gradsync::v1::CheckpointManifest manifest;
  manifest.set_world_size(1);
  for (ChecksumAlgorithm a : kAlgorithms) {
    part->set_checksum(FileDigest(dir + "/" + part->file(), a));
    manifest.clear_parts();
    *manifest.add_parts() = *part;
    if (absl::Status s = ckpt::WriteManifest(dir, manifest); !s.ok()) return Fail(std::string(s.message()));
    std::vector<double> seconds;
    for (int i = 0; i < o.iters; ++i) {
      const auto t = std::chrono::steady_clock::now();
      const absl::Status s = ckpt::VerifyCheckpoint(dir);
      seconds.push_back(Seconds(t));
      if (!s.ok()) return Fail(std::string(s.message()));
    }
    PrintRow("verify", a, bytes, Summarise(seconds));
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string error;
  if (!ParseOptions(argc, argv, &o, &error)) return Fail(error);
  std::printf("%d MiB, %d passes, 1 MiB pieces; best and median\n", o.mib, o.iters);
  std::printf("%-8s %-8s %12s %13s %12s %13s\n", "case", "checksum", "best", "rate", "median", "rate");
  MemoryCase(o);
  return o.dir.empty() ? 0 : VerifyCase(o);
}

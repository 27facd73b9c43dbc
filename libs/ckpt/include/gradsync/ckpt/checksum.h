// Checksums of checkpoint parts and weights files. A digest in text names its algorithm:
// "xxh3-64:" (XXH3, 64 bits, seed 0: what gradsync writes) or "fnv1a64:" (64-bit FNV-1a: files
// written before, still verified), then 16 lowercase hex digits. A digest is always checked with
// the algorithm its prefix names, so older checkpoints keep verifying.
//
// Neither is cryptographic: they catch torn writes, bit rot and swapped files, not tampering.
// XXH3 runs at memory speed (bench/README.md), FNV-1a a byte at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "gradsync/core/bounded_file.h"

struct XXH3_state_s;  // libxxhash's streaming state, kept out of this header

namespace gradsync::ckpt {

enum class ChecksumAlgorithm { kFnv1a64, kXxh3_64 };

// What new files are written with.
inline constexpr ChecksumAlgorithm kWriteChecksum = ChecksumAlgorithm::kXxh3_64;

// "fnv1a64" or "xxh3-64": the prefix of the algorithm's digests, without the colon.
const char* ChecksumName(ChecksumAlgorithm algorithm);

// "<name>:" and the 16 lowercase hex digits of `value`.
std::string FormatDigest(ChecksumAlgorithm algorithm, uint64_t value);

// The algorithm `digest`'s prefix names. DATA_LOSS naming `file` (the file the digest describes)
// and the prefix when the prefix is unknown or missing.
absl::StatusOr<ChecksumAlgorithm> DigestAlgorithm(const std::string& digest, const std::string& file);

// A checksum fed in pieces: the value of the concatenation of every Update, whatever the cut.
// Value() may be read at any time and feeding may go on after it. Not thread-safe; movable.
class StreamingChecksum {
 public:
  explicit StreamingChecksum(ChecksumAlgorithm algorithm);
  StreamingChecksum(StreamingChecksum&& other) noexcept;
  StreamingChecksum& operator=(StreamingChecksum&& other) noexcept;
  StreamingChecksum(const StreamingChecksum&) = delete;
  StreamingChecksum& operator=(const StreamingChecksum&) = delete;
  ~StreamingChecksum();

  void Update(std::span<const std::byte> bytes);
  uint64_t Value() const;
  std::string Digest() const { return FormatDigest(algorithm_, Value()); }
  ChecksumAlgorithm algorithm() const { return algorithm_; }

 private:
  ChecksumAlgorithm algorithm_;
  uint64_t fnv_ = 0;
  XXH3_state_s* xxh3_ = nullptr;  // owned; only for kXxh3_64
};

// A whole file's size and digest.
struct FileDigest {
  int64_t bytes = 0;
  std::string digest;  // "<algorithm>:<hex>" of the whole file
};

// Streams the whole regular file through `algorithm` in 1 MiB reads (OpenRegularFile: a fifo or
// device is refused, never waited on; with kRefuse a symbolic link too). NOT_FOUND when it is
// missing.
absl::StatusOr<FileDigest> DigestFile(const std::string& path, ChecksumAlgorithm algorithm,
                                      Links links = Links::kFollow);

}  // namespace gradsync::ckpt

// Loss masks beside token shards: which tokens count as targets, for data whose loss covers only
// part of the text (supervised fine-tuning: the assistant's replies of a chat, not the prompts).
// llm.c's shard format has no room for one, so the mask is a file of gradsync's own beside the
// shard it belongs to, `train_000000.mask` for `train_000000.bin`:
//
//   header: 256 x int32, [0] = magic 20241201, [1] = version 1, [2] = token count (the shard's)
//   body:   ceil(count / 8) bytes; bit i % 8 (least significant first) of byte i / 8 is 1 when
//           token i counts: a window whose target is token i adds its loss and its gradient only
//           then. Bits past the count are 0.
//
// The shard itself stays an llm.c shard (llm.c reads it, ignoring the mask). A dataset reads the
// mask a window at a time beside its tokens (MaskReader), so masks cost no memory per token either.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync::data {
namespace internal {
class ReadOnlyFile;
}  // namespace internal

inline constexpr int32_t kLossMaskMagic = 20241201;
inline constexpr int32_t kLossMaskVersion = 1;

// The mask file of the shard at `shard_path`: its ".bin" replaced by ".mask" (appended otherwise).
std::string LossMaskPath(const std::string& shard_path);

// Writes the mask of a shard of `mask.size()` tokens (each 0 or 1) atomically (temporary file,
// fsync, rename). INTERNAL naming the file on I/O errors; INVALID_ARGUMENT for more tokens than
// the header's int32 count holds.
absl::Status WriteLossMask(const std::string& path, std::span<const uint8_t> mask);

class MaskReader;

// The loss mask beside the shard at `shard_path` (LossMaskPath), opened for its `tokens`; none when
// the shard has none. MaskReader::Open's errors.
absl::StatusOr<std::optional<MaskReader>> OpenMaskOf(const std::string& shard_path, int64_t tokens);

class MaskReader {
 public:
  // Opens the mask at `path` for a shard of `tokens` tokens: a regular file, the magic and version,
  // the same count, and exactly the bytes that count needs. INVALID_ARGUMENT naming the file
  // otherwise (NOT_FOUND when it cannot be opened).
  static absl::StatusOr<MaskReader> Open(const std::string& path, int64_t tokens);

  const std::string& path() const { return path_; }
  // Bits [first, first + count) into out[0 .. count) as 0 or 1. Thread-safe. DATA_LOSS naming the
  // file when the read fails or comes back short.
  absl::Status Read(int64_t first, int64_t count, uint8_t* out) const;
  // `targets[i]` becomes the ignore index wherever bit first + i is 0 (i < count): what a dataset
  // does to the targets of a window whose first target is token `first`. Read's errors.
  absl::Status MaskTargets(int64_t first, int64_t count, int32_t* targets) const;

 private:
  MaskReader() = default;

  std::string path_;
  std::shared_ptr<const internal::ReadOnlyFile> file_;
  int64_t count_ = 0;
};

}  // namespace gradsync::data

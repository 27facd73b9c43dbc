// One llm.c token shard on disk, read a window at a time: its header and size are checked when it
// is opened, and tokens are read with pread(2) when a batch asks for them. Nothing of the file is
// held in memory, so a dataset of any size (llm.c's FineWeb-10B: about 100 shards, 20 GB) costs a
// rank the batches it reads, and the kernel's page cache (not the rank) keeps what was read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/data/token_stream.h"

namespace gradsync::data {
namespace internal {
class ReadOnlyFile;
}  // namespace internal

class ShardReader {
 public:
  // Opens the shard at `path` and checks it as ReadShard does, apart from the tokens themselves:
  // a regular file (a directory, device or fifo is refused without waiting), the magic and
  // version, at least one token, and a size of exactly the header and the tokens it announces.
  // There is no bound on the size beyond the format's own (an int32 token count). Every error is
  // INVALID_ARGUMENT (NOT_FOUND when it cannot be opened) naming the file, never quoting it.
  static absl::StatusOr<ShardReader> Open(const std::string& path, int vocab_size);

  const std::string& path() const { return path_; }
  int64_t size() const { return count_; }
  TokenWidth width() const { return width_; }

  // Tokens [first, first + count) (within size()) into out[0 .. count), widened. Thread-safe.
  // INVALID_ARGUMENT naming the file for a token outside the vocabulary (so a bad token fails the
  // step that reads it, not the start of the job); DATA_LOSS naming the file when the read fails
  // or comes back short (the file was cut or replaced while training).
  absl::Status Read(int64_t first, int64_t count, int32_t* out) const;

 private:
  ShardReader() = default;

  std::string path_;
  // Shared: a reader is cheap to copy, and the descriptor closes with the last copy.
  std::shared_ptr<const internal::ReadOnlyFile> file_;
  int64_t count_ = 0;
  TokenWidth width_ = TokenWidth::kUint16;
  int vocab_size_ = 0;
};

}  // namespace gradsync::data

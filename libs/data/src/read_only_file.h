// An open file read at offsets (pread), shared by the readers that stream a dataset from disk
// (ShardReader, MaskReader): copies of a reader share one descriptor, closed with the last.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync::data::internal {

class ReadOnlyFile {
 public:
  // The regular file at `path`, opened as OpenRegularFile does, and its size. INVALID_ARGUMENT
  // naming the file for one that is not regular (a directory, a device, a fifo), NOT_FOUND when it
  // cannot be opened.
  static absl::StatusOr<std::shared_ptr<const ReadOnlyFile>> Open(const std::string& path, int64_t* size);

  explicit ReadOnlyFile(int fd) : fd_(fd) {}
  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  int fd() const { return fd_; }
  // Exactly `n` bytes at `offset` into `out`; false on an error or a short read (errno says which
  // for an error). Thread-safe.
  bool ReadAt(void* out, size_t n, int64_t offset) const;

 private:
  const int fd_;
};

}  // namespace gradsync::data::internal

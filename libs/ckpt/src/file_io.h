// Private to libs/ckpt: the file operations every checkpoint file shares. Atomic replacement
// (temporary file in the same directory, fsync, rename, fsync of the directory) and streaming
// digests, so neither a crash nor a large file leaves a reader with half a file or a full copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/ckpt/checksum.h"
#include "gradsync/core/bounded_file.h"

namespace gradsync::ckpt {

// An error for the failed `what` ("cannot open", ...) on `path` from errno: NOT_FOUND for
// ENOENT, PERMISSION_DENIED for EACCES, INTERNAL otherwise.
absl::Status ErrnoStatus(const std::string& what, const std::string& path);

// Writes `path` through a temporary file next to it. Nothing is visible at `path` until Commit()
// returns OK; destroying an uncommitted file removes the temporary. Not thread-safe.
class AtomicFile {
 public:
  // Creates the parent directories and opens the temporary file.
  static absl::StatusOr<AtomicFile> Create(const std::string& path);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  ~AtomicFile();

  absl::Status Append(std::span<const std::byte> bytes);
  absl::Status Append(std::string_view bytes) { return Append(std::as_bytes(std::span(bytes))); }

  // fsync, close, rename over `path`, fsync of the directory.
  absl::Status Commit();

 private:
  AtomicFile(std::string path, std::string tmp, int fd) : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd) {}
  void Abandon();

  std::string path_;
  std::string tmp_;
  int fd_ = -1;
};

// Appends `bytes` to `out` and feeds them to `sum`, 1 MiB at a time: each piece is written while it is
// still in the cache that hashing it brought it into. AtomicFile::Append's errors.
absl::Status AppendHashed(AtomicFile& out, std::span<const std::byte> bytes, StreamingChecksum& sum);

// Replaces `path` with `contents` through an AtomicFile.
absl::Status WriteFileAtomically(const std::string& path, std::string_view contents);

// fsync of a directory, so a rename inside it survives a crash.
absl::Status SyncDir(const std::string& dir);


// The bytes of the regular file `path`. NOT_FOUND when it is missing; FAILED_PRECONDITION naming
// the path when it is a directory or another non-regular file (which a stream would open and then
// fail to read with an exception); otherwise the errno status of the failed call.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace gradsync::ckpt

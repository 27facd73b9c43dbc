// A job's artifacts: the regular files in its own directory, <artifact_root>/<job id>, which its
// workers and the coordinator write (weights, checkpoints, exports, reports), listed and read for
// JobService.ListArtifacts/GetArtifact and the REST gateway.
//
// Confinement. Workers write the directory, so it may hold anything a worker can plant: symbolic
// links to /etc, fifos, hard links. Nothing outside it is ever read, even by a race with such a
// worker: a file is opened component by component from a descriptor of the job's directory, each
// with O_NOFOLLOW (a symbolic link anywhere on the way is refused, wherever it points), and only
// then checked with fstat on the descriptor that will be read: a regular file with no other hard
// link. A path names whole components relative to the directory: no leading '/', no "", "." or
// ".." component. Listing walks the directory the same way and shows exactly what Open serves.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gradsync/v1/artifact.pb.h"

namespace gradsync::coordinator {

// GetArtifact's data messages carry at most this many bytes.
inline constexpr size_t kArtifactChunkBytes = 1 << 20;
// A listing holds at most this many files, and paths of this many bytes in all, so that it fits
// one message (gRPC's 4 MiB default); a prefix narrows a larger directory.
inline constexpr size_t kMaxListedArtifacts = 10000;
inline constexpr size_t kMaxListedPathBytes = 1 << 20;

// OK when `path` is a relative path of whole names (see the file comment); otherwise
// INVALID_ARGUMENT "<field>: \"<path>\" ..." saying what is wrong. `allow_trailing_slash` admits one
// final '/' (a prefix naming a directory, "checkpoints/") and the empty string.
absl::Status CheckArtifactPath(absl::string_view field, const std::string& path, bool allow_trailing_slash = false);

// One artifact opened for reading: a regular file inside the job's directory, read from the
// descriptor that was checked. Move-only; one thread at a time.
class ArtifactFile {
 public:
  ArtifactFile(int fd, v1::Artifact info) : fd_(fd), info_(std::move(info)), remaining_(info_.size_bytes()) {}
  ArtifactFile(ArtifactFile&& other) noexcept;
  ArtifactFile& operator=(ArtifactFile&&) = delete;
  ~ArtifactFile();

  // The path asked for, and the size and modification time when opened.
  const v1::Artifact& info() const { return info_; }
  // The next at most `max` bytes into `out`; empty once info().size_bytes() bytes were read, or
  // at the end of a file that shrank meanwhile. INTERNAL naming the path on a read error.
  absl::Status Read(size_t max, std::string* out);
  // Back to the file's start, for a second read of the same bytes.
  absl::Status Rewind();

 private:
  int fd_;
  v1::Artifact info_;
  int64_t remaining_;
};

class JobArtifacts {
 public:
  // The directory `job_id` (one path component) of `artifact_root`. Neither need exist.
  JobArtifacts(std::string artifact_root, std::string job_id)
      : root_(std::move(artifact_root)), job_id_(std::move(job_id)) {}

  // The regular files whose relative path starts with `prefix` (all when empty), sorted by path,
  // with size and modification time, and with their SHA-256 when `sha256` (which reads them).
  // Symbolic links, other kinds of files, files with other hard links and names that are not
  // UTF-8 are left out; so is every directory reached through a link. None when the job's
  // directory does not exist yet. INVALID_ARGUMENT "prefix: ..." (CheckArtifactPath);
  // RESOURCE_EXHAUSTED past kMaxListedArtifacts files or kMaxListedPathBytes of paths, saying to
  // narrow the prefix; INTERNAL naming the directory on an I/O error.
  absl::StatusOr<v1::ListArtifactsResponse> List(const std::string& prefix, bool sha256) const;

  // Opens artifact `path`. INVALID_ARGUMENT "path: ..." for a path CheckArtifactPath refuses, a
  // symbolic link on the way or at the end, a directory, anything but a regular file, or a file
  // with other hard links; NOT_FOUND "path: ..." naming the path and the job when there is no such
  // file; INTERNAL naming the path when it cannot be opened otherwise.
  absl::StatusOr<ArtifactFile> Open(const std::string& path) const;

 private:
  std::string root_;
  std::string job_id_;
};

// Sends `file` as GetArtifact's stream through `write`: the header, the data in chunks of
// kArtifactChunkBytes, the trailer with the bytes sent and their SHA-256. CANCELLED when `write`
// returns false (the client went away) or `cancelled` returns true; the file's read error
// otherwise.
absl::Status SendArtifact(ArtifactFile& file, const std::function<bool(const v1::GetArtifactResponse&)>& write,
                          const std::function<bool()>& cancelled);

// The SHA-256 (lowercase hex) of the whole of `file`, read once in chunks; the file is then read
// from its start again (ArtifactFile::Rewind), for its bytes to follow the digest, which a REST
// reply sends as a header first. RESOURCE_EXHAUSTED "path: ..." when the file is larger than
// `max_bytes`, naming both sizes; INTERNAL on a read error.
absl::StatusOr<std::string> HashArtifact(ArtifactFile& file, int64_t max_bytes);

}  // namespace gradsync::coordinator

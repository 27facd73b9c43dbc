// How `gradsync artifacts get` writes a job's file: under the output directory at the path the
// coordinator lists it by, into a temporary file beside it that is renamed into place only once
// the bytes received have the size and SHA-256 the coordinator says it sent. A refused request,
// a broken transfer, a mismatch or an interrupt leaves nothing behind (no file, no directory).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/status/statusor.h"
#include "job_client.h"

namespace gradsync::cli {

// OK when `path` may be written under an output directory: relative, of whole names (no empty,
// "." or ".." component). INVALID_ARGUMENT "path: ..." otherwise: a file a coordinator names
// outside the directory is never written.
absl::Status CheckDownloadPath(const std::string& path);

struct Downloaded {
  std::string file;  // where it was written: `dir`/`path`
  int64_t bytes = 0;
  std::string sha256;  // lowercase hex
};

// Fetches artifact `path` of job `job` into `dir`/`path` (creating its directories once the
// coordinator has accepted the request), replacing a file there. `progress` (stderr; may be null)
// shows a large file's bytes as they come (TransferProgress). Errors: the coordinator's (naming
// `path`), INVALID_ARGUMENT from CheckDownloadPath, DATA_LOSS when size or checksum differ,
// CANCELLED on SIGINT/SIGTERM (gradsync/core/shutdown.h), INTERNAL naming the local file that
// cannot be written.
absl::StatusOr<Downloaded> DownloadArtifact(JobClient& client, const std::string& job, const std::string& path,
                                            const std::string& dir, FILE* progress);

}  // namespace gradsync::cli

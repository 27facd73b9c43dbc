// The job log files a local cluster's workers write (gradsync-worker --job_log_dir, one file per
// rank: <state-dir>/logs/jobs/<job id>/rank-<r>.log), read back for `gradsync logs` once the
// cluster is gone.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync::cluster {

// The job log directory of a local cluster's state directory: <state_dir>/logs/jobs.
std::string JobLogDir(const std::string& state_dir);

// Every line of job `job_id`'s files under `job_log_dir` (only rank `rank`'s when set), merged in
// time order; a rank's own lines keep their order. NOT_FOUND naming the directory when the job has
// no files there.
absl::StatusOr<std::string> ReadJobLogFiles(const std::string& job_log_dir, const std::string& job_id,
                                            std::optional<int> rank);

}  // namespace gradsync::cluster

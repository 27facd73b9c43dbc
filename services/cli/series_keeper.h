// A local cluster's curves, kept where `gradsync report --state-dir DIR` reads them once the
// cluster is down: each job's series in <DIR>/artifacts/<job id>/series.jsonl, beside its weights.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "connection.h"
#include "job_client.h"
#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/telemetry.pb.h"

namespace gradsync::cli {

// Writes `series` to the job's series file, <state_dir>/artifacts/<job id>/series.jsonl, where
// `report --state-dir` reads it; returns its path.
absl::StatusOr<std::string> KeepSeries(const v1::JobSeries& series, const v1::Job& job, const std::string& state_dir);

// Keeps the series of the jobs of the local cluster in `state_dir` as they end, asking its
// coordinator which ended and its metrics service for their series. Used by the cluster's
// supervisor, from one thread.
class SeriesKeeper {
 public:
  explicit SeriesKeeper(std::string state_dir) : state_dir_(std::move(state_dir)) {}

  // Writes the series file of each job that ended since the last call and whose series holds its
  // last step; with `all` (the cluster stops) also those of jobs still running, as far as they got.
  // What cannot be written is said on stderr (the supervisor's log) and tried again next call.
  void Keep(bool all);

 private:
  std::string state_dir_;
  std::unique_ptr<JobClient> client_;
  MetricsApi api_;
  std::set<std::string> kept_;
  std::map<std::string, int> tries_;  // by job id: calls that found its series short of its end
};

}  // namespace gradsync::cli

#include "series_keeper.h"

#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "connection.h"
#include "job_client.h"
#include "metrics_client.h"
#include "series_files.h"

namespace gradsync::cli {
namespace {

constexpr int kTriesForLastStep = 5;

// Whether `series` reaches the job's last step: a series fetched the moment a job ends may still
// miss its final reports.
bool Complete(const v1::JobSeries& series, const v1::Job& job) {
  return series.steps_size() > 0 && series.steps(series.steps_size() - 1).step() >= job.result().global_step();
}

}  // namespace

absl::StatusOr<std::string> KeepSeries(const v1::JobSeries& series, const v1::Job& job, const std::string& state_dir) {
  namespace fs = std::filesystem;
  // The job's own directory, where `report --state-dir` looks (its weights may lie in a
  // subdirectory of it, checkpoint.dir).
  const fs::path dir = fs::path(state_dir) / "artifacts" / job.id();
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string path = (dir / kSeriesFileName).string();
  if (absl::Status s = WriteFileAtomically(path, SeriesJsonl(series)); !s.ok()) return s;
  return path;
}

void SeriesKeeper::Keep(bool all) {
  if (client_ == nullptr) {
    // Connected once: the cluster's addresses and tokens stay what they were when it started.
    Args args;
    args.Add("state-dir", state_dir_);
    absl::StatusOr<std::unique_ptr<JobClient>> client = ConnectJobClient(args);
    absl::StatusOr<MetricsApi> api = MetricsApiFromArgs(args);
    if (!client.ok() || !api.ok() || api->address.empty()) return;
    client_ = *std::move(client);
    api_ = *std::move(api);
  }
  const MetricsApi* api = &api_;
  absl::StatusOr<v1::ListJobsResponse> jobs = ListAllJobs(*client_, 500);
  if (!jobs.ok()) return;
  for (const v1::Job& job : jobs->jobs()) {
    const bool ended = IsTerminal(job.state());
    if (kept_.count(job.id()) > 0 || (!ended && !all)) continue;
    absl::StatusOr<v1::JobSeries> series = FetchSeries(api->address, api->token, job.id());
    if (!series.ok() || series->steps_size() == 0) continue;
    // The last reports of a job that just ended may still be on their way: a few more tries.
    if (ended && !all && !Complete(*series, job) && ++tries_[job.id()] < kTriesForLastStep) continue;
    absl::StatusOr<std::string> path = KeepSeries(*series, job, state_dir_);
    if (!path.ok()) {
      std::fprintf(stderr, "the series of jobs/%s is not kept: %s\n", job.id().c_str(),
                   std::string(path.status().message()).c_str());
      continue;
    }
    if (ended) kept_.insert(job.id());
  }
}

}  // namespace gradsync::cli

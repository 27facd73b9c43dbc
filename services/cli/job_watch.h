// Following one job to its end with progress, as `gradsync submit --wait`, `watch` and `run` all do:
// the progress view fed by the coordinator's stream, the curve from the metrics API, and the series
// as it stands once the job's last step has reached it.
#pragma once

#include <atomic>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "connection.h"
#include "display.h"
#include "gradsync/v1/job.pb.h"
#include "job_client.h"

namespace gradsync::cli {

struct FollowedJob {
  absl::StatusOr<v1::Job> job;           // as it ended; the watch's error otherwise
  absl::StatusOr<v1::JobSeries> series;  // from the metrics API; an error without one
};

// Watches job `name` through `client` until it ends or `*stop` is set (by the caller's signal or
// supervisor thread; the watch sets it when it returns), feeding `view`. With a metrics API
// address the view's curve comes from it: first what the job has so far, then, once the job ended,
// the series after it holds the job's last step (the workers' last reports may still be on their
// way), after `await_last_step`, or at once when the API does not answer; when the watch ended
// early, the series as it stands. Leaves `view` to the caller to Finish.
FollowedJob FollowJob(JobClient& client, const std::string& name, ProgressView& view, const MetricsApi& metrics_api,
                      std::atomic<bool>* stop, absl::Duration await_last_step = absl::Seconds(5));

}  // namespace gradsync::cli

#include "job_watch.h"

#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "metrics_client.h"

namespace gradsync::cli {
namespace {

// Until the metrics API's series holds step `last`, or `wait` has passed; at once when the API
// does not answer (nothing to wait for).
void AwaitLastStep(const MetricsApi& api, const std::string& id, int64_t last, absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  while (absl::Now() < deadline) {
    auto series = FetchSeries(api.address, api.token, id);
    if (!series.ok()) return;
    if (series->steps_size() > 0 && series->steps(series->steps_size() - 1).step() >= last) return;
    absl::SleepFor(absl::Milliseconds(100));
  }
}

}  // namespace

FollowedJob FollowJob(JobClient& client, const std::string& name, ProgressView& view, const MetricsApi& metrics_api,
                      std::atomic<bool>* stop, absl::Duration await_last_step) {
  const bool metrics = !metrics_api.address.empty();
  // Attached to a job that has run: its curve so far.
  if (metrics) {
    (void)view.UseSeriesFrom(metrics_api.address, metrics_api.token, std::string(absl::StripPrefix(name, "jobs/")));
  }
  FollowedJob out{client.Watch(
                      name, [&](const v1::Job& j) { view.Update(j); }, stop),
                  absl::UnavailableError("no metrics API")};
  *stop = true;
  if (!metrics) return out;
  // Also when the watch ended early (Ctrl-C): the curve so far is still worth keeping.
  const std::string id = out.job.ok() ? out.job->id() : std::string(absl::StripPrefix(name, "jobs/"));
  if (out.job.ok()) AwaitLastStep(metrics_api, id, out.job->result().global_step(), await_last_step);
  out.series = view.UseSeriesFrom(metrics_api.address, metrics_api.token, id);
  return out;
}

}  // namespace gradsync::cli

#include "metrics_collector.h"

#include <utility>

namespace gradsync::metrics {

MetricsCollector::MetricsCollector(telemetry::StepReducerOptions options, TrainingMetrics* metrics)
    : reducer_(std::move(options)), metrics_(metrics) {}

absl::Status MetricsCollector::Ingest(const v1::StepReport& report) {
  // Before the reducer takes it: a report refused here changes nothing, as an invalid one.
  if (absl::Status room = metrics_->CheckRoomFor(report.job_id(), report.rank()); !room.ok()) return room;
  absl::StatusOr<telemetry::AddResult> result = reducer_.Add(report);
  if (!result.ok()) {
    metrics_->RecordInvalidReport();
    return result.status();
  }
  metrics_->RecordReport(report, result->outcome);
  for (const v1::ReducedStep& step : result->published) metrics_->RecordStep(step);
  return absl::OkStatus();
}

void MetricsCollector::Tick() {
  telemetry::TickResult result = reducer_.Tick();
  for (const v1::ReducedStep& step : result.published) metrics_->RecordStep(step);
  for (const std::string& job : result.forgotten_jobs) metrics_->ForgetJob(job);
}

absl::StatusOr<v1::JobSeries> MetricsCollector::Series(const std::string& job_id, size_t limit) const {
  return reducer_.Series(job_id, limit);
}

v1::JobList MetricsCollector::Jobs() const {
  v1::JobList list;
  for (std::string& id : reducer_.Jobs()) list.add_job_ids(std::move(id));
  return list;
}

}  // namespace gradsync::metrics

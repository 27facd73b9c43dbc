// The metrics service's logic, without a server: step reports in, reduced steps out to the
// Prometheus series and to the JSON series.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/telemetry/step_reducer.h"
#include "gradsync/v1/metrics.pb.h"
#include "gradsync/v1/telemetry.pb.h"
#include "training_metrics.h"

namespace gradsync::metrics {

// Thread-safe: every method may be called from any thread.
class MetricsCollector {
 public:
  // `metrics` must outlive the collector.
  MetricsCollector(telemetry::StepReducerOptions options, TrainingMetrics* metrics);

  // Takes one rank's report. INVALID_ARGUMENT for a malformed one (counted, nothing else
  // changes); RESOURCE_EXHAUSTED, likewise, for one whose job or rank would need a series label
  // set beyond TrainingMetrics' limit, or a job beyond the reducer's. Duplicate and late reports
  // are OK: counted and dropped.
  absl::Status Ingest(const v1::StepReport& report);

  // Publishes timed-out steps and forgets idle jobs; the server calls it every second.
  void Tick();

  // See StepReducer::Series.
  absl::StatusOr<v1::JobSeries> Series(const std::string& job_id, size_t limit) const;
  v1::JobList Jobs() const;

 private:
  telemetry::StepReducer reducer_;
  TrainingMetrics* metrics_;
};

}  // namespace gradsync::metrics

// The metrics service's logic, without a server: step reports in, reduced steps out to the
// Prometheus series and to the JSON series, and the series to and from the store when there is
// one.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gradsync/telemetry/step_reducer.h"
#include "gradsync/v1/metrics.pb.h"
#include "gradsync/v1/telemetry.pb.h"
#include "series_store.h"
#include "training_metrics.h"

namespace gradsync::metrics {

// Thread-safe: every method may be called from any thread.
class MetricsCollector {
 public:
  // `metrics` must outlive the collector.
  MetricsCollector(telemetry::StepReducerOptions options, TrainingMetrics* metrics);

  // Keeps the series in `store` too (which must outlive the collector): takes up the jobs it
  // holds that reported within the idle TTL, and a job it holds again at its next report. Call it
  // once, before any other method. Errors are the store's.
  absl::Status UseStore(SeriesStore* store);

  // Takes one rank's report. INVALID_ARGUMENT for a malformed one (counted, nothing else
  // changes); RESOURCE_EXHAUSTED, likewise, for one whose job or rank would need a series label
  // set beyond TrainingMetrics' limit, or a job beyond the reducer's. Duplicate and late reports
  // are OK: counted and dropped.
  absl::Status Ingest(const v1::StepReport& report);

  // Publishes timed-out steps and forgets idle jobs; the server calls it every second.
  void Tick();

  // See StepReducer::Series; a job the reducer no longer tracks comes from the store.
  absl::StatusOr<v1::JobSeries> Series(const std::string& job_id, size_t limit) const;
  // The jobs tracked and those stored.
  v1::JobList Jobs() const;

  // For the store's writer (SeriesWriter): writes to the store, in one transaction, what changed
  // since the last call, and the jobs in `whole` entire (those still tracked). Meanwhile no job is
  // taken up from the store, so none comes back from a store that misses its last changes.
  struct Flushed {
    absl::Status status;            // the store's
    std::vector<std::string> jobs;  // the jobs written, or that a failed flush lost
  };
  Flushed FlushToStore(const absl::flat_hash_set<std::string>& whole);
  std::vector<std::string> TrackedJobs() const { return reducer_.Jobs(); }

 private:
  // When the store holds a job the reducer does not track, the reducer takes it up before the
  // job's report, so the series goes on rather than starting again.
  void TakeUpStored(const std::string& job_id);

  const absl::Duration job_idle_ttl_;
  const size_t max_jobs_;
  telemetry::StepReducer reducer_;
  TrainingMetrics* metrics_;
  SeriesStore* store_ = nullptr;
  // Held while a job is taken up from the store, so that two reports cannot both take it up, and
  // while changes go to the store.
  absl::Mutex store_mu_;
};

}  // namespace gradsync::metrics

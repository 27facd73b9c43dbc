// The Prometheus series of gradsync-metrics: every family, and which labels each series carries.
// Series are labelled `training_job` (and `rank`), never `job` or `instance`, which Prometheus
// sets itself to the scrape target.
#pragma once

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "gradsync/telemetry/step_reducer.h"
#include "gradsync/v1/metrics.pb.h"
#include "gradsync/v1/telemetry.pb.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace gradsync::metrics {

// Thread-safe: every method may be called from any thread.
//
// The series are bounded by their count, what a scrape's size and Prometheus's memory follow: a job
// ({training_job}, in every job-level family) costs kJobSeries series, one rank of a job
// ({training_job, rank}, in every rank-level family, histogram buckets included) kRankSeries, each
// charged whole when the job or rank first reports (so a rank's memory gauges, made later, never
// pass the bound), and at most `max_series` are charged at once. Ranks per job are bounded by the
// reducer's world size limit and jobs by its job limit; this bounds their product, which would
// otherwise be millions of series.
class TrainingMetrics {
 public:
  // The series of one job and of one rank, every bucket of their histograms counted.
  static const size_t kJobSeries;
  static const size_t kRankSeries;
  // Room for one job of 4096 ranks (about 238K series): a scrape of about 25 MB at most.
  static constexpr size_t kDefaultMaxSeries = 250000;

  explicit TrainingMetrics(size_t max_series = kDefaultMaxSeries);
  ~TrainingMetrics();

  TrainingMetrics(const TrainingMetrics&) = delete;
  TrainingMetrics& operator=(const TrainingMetrics&) = delete;

  // What an exposer serves. Shared so that the exposer may outlive a scrape in flight.
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // OK when the series of (job, rank) exist or there is room for them; otherwise counts the
  // refusal and says RESOURCE_EXHAUSTED naming the limit. Asked before a report is taken.
  absl::Status CheckRoomFor(const std::string& job_id, int32_t rank);
  // One rank's report, with what the reducer made of it: every report is counted; accepted ones
  // update that rank's series. A job or rank with no room for its series is not recorded.
  void RecordReport(const v1::StepReport& report, telemetry::ReportOutcome outcome);
  void RecordInvalidReport();
  // A step reduced across ranks: updates the job's series.
  void RecordStep(const v1::ReducedStep& step);
  // Removes every series of the job (it went idle), so series do not pile up.
  void ForgetJob(const std::string& job_id);
  // The series store (--state_dir): a flush committed or failed; jobs deleted past retention.
  void RecordStoreFlush(bool ok);
  void RecordExpiredJobs(size_t n);

 private:
  struct RankHandles;
  struct JobHandles;

  // The series of a job or of one of its ranks, made when missing; null when there is no room.
  JobHandles* Job(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  RankHandles* Rank(JobHandles& job, const std::string& job_id, int32_t rank) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets the rank's memory gauges from `report`'s memory.
  void RecordMemory(RankHandles& rank, const v1::StepReport& report) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Whether `series` more fit within max_series_.
  bool HasRoom(size_t series) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return series_ + series <= max_series_; }

  const size_t max_series_;

  std::shared_ptr<prometheus::Registry> registry_;
  // Job level: {training_job}.
  prometheus::Family<prometheus::Gauge>& loss_;
  prometheus::Family<prometheus::Gauge>& step_;
  prometheus::Family<prometheus::Gauge>& generation_;
  prometheus::Family<prometheus::Counter>& samples_;
  prometheus::Family<prometheus::Counter>& tokens_;
  prometheus::Family<prometheus::Gauge>& tokens_per_second_;
  prometheus::Family<prometheus::Histogram>& step_duration_;
  prometheus::Family<prometheus::Gauge>& grad_norm_;
  prometheus::Family<prometheus::Gauge>& learning_rate_;
  // Made for a job at its first validation loss, so a job without validation data has none.
  prometheus::Family<prometheus::Gauge>& validation_loss_;
  prometheus::Family<prometheus::Counter>& partial_steps_;
  prometheus::Family<prometheus::Counter>& reports_;
  prometheus::Family<prometheus::Counter>& late_reports_;
  prometheus::Family<prometheus::Counter>& duplicate_reports_;
  // Rank level: {training_job, rank}.
  prometheus::Family<prometheus::Gauge>& rank_loss_;
  prometheus::Family<prometheus::Histogram>& rank_step_duration_;
  prometheus::Family<prometheus::Histogram>& allreduce_duration_;
  prometheus::Family<prometheus::Histogram>& exposed_communication_;
  prometheus::Family<prometheus::Counter>& allreduce_bytes_;
  prometheus::Family<prometheus::Counter>& stragglers_;
  // Rank level with a kind: {training_job, rank, kind}; made at the rank's first report that
  // carries its memory (device at the first with a device peak).
  prometheus::Family<prometheus::Gauge>& rank_memory_;
  prometheus::Family<prometheus::Gauge>& rank_peak_memory_;
  // No labels.
  prometheus::Counter& invalid_reports_;
  prometheus::Counter& refused_reports_;
  prometheus::Counter& store_flushes_;
  prometheus::Counter& store_write_errors_;
  prometheus::Counter& store_expired_jobs_;

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<JobHandles>> jobs_ ABSL_GUARDED_BY(mu_);
  size_t series_ ABSL_GUARDED_BY(mu_) = 0;  // charged for jobs_ and their ranks
};

}  // namespace gradsync::metrics

// StepReducer: turns per-rank step reports into job-level steps, reduced across ranks.
//
// A step of (job, generation) is published once every rank of its world_size has reported, or,
// marked partial and naming the missing ranks, once `step_timeout` has passed since its first
// report. Reports may arrive in any order. Plain logic: no RPC, no threads of its own; the
// caller drives timeouts by calling Tick() (the metrics service does so every second).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gradsync/telemetry/downsampled_series.h"
#include "gradsync/v1/metrics.pb.h"
#include "gradsync/v1/telemetry.pb.h"

namespace gradsync::telemetry {

struct StepReducerOptions {
  // A step still missing ranks this long after its first report is published partial.
  absl::Duration step_timeout = absl::Seconds(30);
  // A rank is a straggler when its step_seconds exceeds factor x the step's median.
  double straggler_factor = 1.5;
  // Points kept per job for Series(): the first step, older steps merged into buckets, and the
  // newest `series_recent` steps as published (DownsampledSeries).
  size_t series_capacity = 2000;
  size_t series_recent = 500;
  // Record what changes in each job's series and counters for TakeSeriesChanges() (a store).
  bool track_series_changes = false;
  // Pending steps kept per job; beyond this the oldest is published partial at once, so a job
  // whose ranks never agree cannot grow memory without bound.
  size_t max_pending_steps = 1024;
  // Largest world size a report may claim (the spec's limit): a step's missing ranks are counted
  // out one by one, so an unbounded claim would be an unbounded allocation.
  int32_t max_world_size = 4096;
  // Jobs tracked at once; a report that would start one more is refused until Tick() forgets
  // an idle one.
  size_t max_jobs = 1024;
  // A job with no report for this long is forgotten by Tick() (a store keeps its series); with
  // track_series_changes only once TakeSeriesChanges() has taken its last changes.
  absl::Duration job_idle_ttl = absl::Hours(1);
  std::function<absl::Time()> clock = [] { return absl::Now(); };
};

enum class ReportOutcome {
  kAccepted,
  // Same (job, generation, step, rank) as a pending report: ignored.
  kDuplicate,
  // Its step was already published, or its generation is older than the job's newest: dropped.
  kLate,
};

struct AddResult {
  ReportOutcome outcome = ReportOutcome::kAccepted;
  // Steps this report completed (or pushed out of a full pending set), in publication order.
  std::vector<v1::ReducedStep> published;
};

struct TickResult {
  // Steps that timed out, each partial.
  std::vector<v1::ReducedStep> published;
  // Jobs idle for longer than job_idle_ttl, now forgotten.
  std::vector<std::string> forgotten_jobs;
};

// A job as a store keeps it: its counters (a JobSeries without steps), when it last reported,
// and the points of its series.
struct StoredJob {
  v1::JobSeries counters;
  absl::Time last_report;
  std::vector<DownsampledSeries::Point> points;
};

// What changed in a job since the last TakeSeriesChanges(): its counters and last report as they
// are now, the points made or changed and the ids removed.
struct SeriesChanges {
  std::string job_id;
  v1::JobSeries counters;  // without steps
  absl::Time last_report;
  DownsampledSeries::Changes points;
  // The points are the whole series: a store drops the job's other points.
  bool replace = false;
};

// Thread-safe: every method may be called from any thread.
class StepReducer {
 public:
  explicit StepReducer(StepReducerOptions options);
  ~StepReducer();

  StepReducer(const StepReducer&) = delete;
  StepReducer& operator=(const StepReducer&) = delete;

  // Takes one rank's report. INVALID_ARGUMENT (and nothing changes) when job_id is empty,
  // world_size is outside [1, max_world_size], rank is outside [0, world_size), step < 0, or
  // world_size differs from that of the step's earlier reports; RESOURCE_EXHAUSTED when it would
  // start a job beyond max_jobs. A report of a newer generation drops the job's pending steps
  // of older generations (counted as superseded).
  absl::StatusOr<AddResult> Add(const v1::StepReport& report);

  // Publishes the steps whose timeout has passed and forgets idle jobs.
  TickResult Tick();

  // The job's most recent reduced steps (at most `limit`; 0 means all kept), oldest first, with
  // its counters. NOT_FOUND for a job never heard of or already forgotten.
  absl::StatusOr<v1::JobSeries> Series(const std::string& job_id, size_t limit = 0) const;

  // The ids of the jobs currently known, sorted.
  std::vector<std::string> Jobs() const;
  bool Tracks(const std::string& job_id) const;

  // Takes up a job as a store kept it, series within this reducer's bounds: reports of its
  // newest generation for a step up to its newest are then late. ALREADY_EXISTS when the job is
  // tracked (nothing changes), RESOURCE_EXHAUSTED beyond max_jobs.
  absl::Status Restore(StoredJob job);
  // With track_series_changes: the changes of every job that changed since the last call. Empty
  // otherwise.
  std::vector<SeriesChanges> TakeSeriesChanges();
  // A tracked job's whole series as changes with `replace`, for a store that missed some;
  // NOT_FOUND for a job not tracked.
  absl::StatusOr<SeriesChanges> SeriesSnapshot(const std::string& job_id) const;

 private:
  struct JobState;

  StepReducerOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<JobState>> jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync::telemetry

#include "gradsync/telemetry/step_reducer.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/container/btree_set.h"
#include "absl/strings/str_cat.h"
#include "reduce_step.h"

namespace gradsync::telemetry {
namespace {

struct PendingStep {
  absl::Time first_seen;
  int32_t world_size = 0;
  std::map<int32_t, v1::StepReport> reports;  // by rank
};

DownsampledSeriesOptions SeriesOptions(const StepReducerOptions& o) {
  return {.capacity = o.series_capacity, .recent = o.series_recent, .track_changes = o.track_series_changes};
}

absl::Status Validate(const v1::StepReport& r, int32_t max_world_size) {
  if (r.job_id().empty()) return absl::InvalidArgumentError("step report: job_id is required");
  if (r.world_size() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("step report: world_size ", r.world_size(), " < 1"));
  }
  if (r.world_size() > max_world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("step report: world_size ", r.world_size(), " exceeds the limit of ", max_world_size));
  }
  if (r.rank() < 0 || r.rank() >= r.world_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("step report: rank ", r.rank(), " outside [0, ", r.world_size(), ")"));
  }
  if (r.step() < 0) return absl::InvalidArgumentError(absl::StrCat("step report: step ", r.step(), " < 0"));
  return absl::OkStatus();
}

}  // namespace

struct StepReducer::JobState {
  explicit JobState(const StepReducerOptions& options) : series(SeriesOptions(options)) {}

  // The newest generation seen; pending and published hold steps of this generation only.
  int32_t generation = 0;
  std::map<int64_t, PendingStep> pending;  // by step
  // Recently published steps; every step <= published_floor counts as published too, which
  // keeps this set as small as the series.
  absl::btree_set<int64_t> published;
  int64_t published_floor = -1;
  DownsampledSeries series;
  v1::JobSeries counters;  // everything of JobSeries but its steps
  absl::Time last_report;
  // The counters or last report changed since TakeSeriesChanges().
  bool dirty = false;

  bool IsPublished(int64_t step) const { return step <= published_floor || published.contains(step); }

  // Reduces the pending step at `it`, removes it from `pending` and records it.
  v1::ReducedStep Publish(std::map<int64_t, PendingStep>::iterator it, const StepReducerOptions& options) {
    v1::ReducedStep step = ReduceStep(it->second.reports, it->second.world_size, options.straggler_factor);
    pending.erase(it);
    published.insert(step.step());
    while (published.size() > options.series_capacity) {
      published_floor = std::max(published_floor, *published.begin());
      published.erase(published.begin());
    }
    if (step.partial()) counters.set_partial_steps(counters.partial_steps() + 1);
    for (int32_t rank : step.straggler_ranks()) ++(*counters.mutable_straggler_counts())[rank];
    // The slowest rank is flagged whenever any rank is.
    if (step.straggler_ranks_size() > 0) counters.set_last_straggler_rank(step.slowest_rank());
    series.Add(step);
    return step;
  }

  SeriesChanges TakeChanges(const std::string& id) {
    dirty = false;
    return SeriesChanges{id, counters, last_report, series.TakeChanges()};
  }
};

StepReducer::StepReducer(StepReducerOptions options) : options_(std::move(options)) {
  options_.series_capacity = std::max<size_t>(options_.series_capacity, 1);
  options_.max_pending_steps = std::max<size_t>(options_.max_pending_steps, 1);
}

StepReducer::~StepReducer() = default;

absl::StatusOr<AddResult> StepReducer::Add(const v1::StepReport& report) {
  if (absl::Status s = Validate(report, options_.max_world_size); !s.ok()) return s;
  const absl::Time now = options_.clock();
  absl::MutexLock lock(&mu_);
  if (jobs_.size() >= options_.max_jobs && !jobs_.contains(report.job_id())) {
    return absl::ResourceExhaustedError(
        absl::StrCat("step report of job ", report.job_id(), ": already tracking ", jobs_.size(), " jobs, the limit"));
  }
  std::unique_ptr<JobState>& slot = jobs_[report.job_id()];
  if (slot == nullptr) {
    slot = std::make_unique<JobState>(options_);
    slot->generation = report.generation();
    slot->counters.set_job_id(report.job_id());
    slot->counters.set_generation(report.generation());
  }
  JobState& job = *slot;
  if (report.generation() == job.generation) {
    auto it = job.pending.find(report.step());
    if (it != job.pending.end() && it->second.world_size != report.world_size()) {
      return absl::InvalidArgumentError(absl::StrCat("step report of job ", report.job_id(), " step ", report.step(),
                                                     ": world_size ", report.world_size(), " differs from ",
                                                     it->second.world_size, " of the step's other reports"));
    }
  }

  job.last_report = now;
  job.dirty = true;
  job.counters.set_reports(job.counters.reports() + 1);
  AddResult result;
  if (report.generation() < job.generation) {
    job.counters.set_late_reports(job.counters.late_reports() + 1);
    result.outcome = ReportOutcome::kLate;
    return result;
  }
  if (report.generation() > job.generation) {
    job.counters.set_superseded_steps(job.counters.superseded_steps() + static_cast<int64_t>(job.pending.size()));
    job.pending.clear();
    job.published.clear();
    job.published_floor = -1;
    job.generation = report.generation();
    job.counters.set_generation(report.generation());
  }

  auto it = job.pending.find(report.step());
  if (it == job.pending.end()) {
    if (job.IsPublished(report.step())) {
      job.counters.set_late_reports(job.counters.late_reports() + 1);
      result.outcome = ReportOutcome::kLate;
      return result;
    }
    it = job.pending.emplace(report.step(), PendingStep{now, report.world_size(), {}}).first;
  } else if (it->second.reports.contains(report.rank())) {
    job.counters.set_duplicate_reports(job.counters.duplicate_reports() + 1);
    result.outcome = ReportOutcome::kDuplicate;
    return result;
  }
  it->second.reports.emplace(report.rank(), report);
  if (it->second.reports.size() == static_cast<size_t>(it->second.world_size)) {
    result.published.push_back(job.Publish(it, options_));
  }
  while (job.pending.size() > options_.max_pending_steps) {
    result.published.push_back(job.Publish(job.pending.begin(), options_));
  }
  return result;
}

TickResult StepReducer::Tick() {
  const absl::Time now = options_.clock();
  TickResult result;
  absl::MutexLock lock(&mu_);
  for (auto job_it = jobs_.begin(); job_it != jobs_.end();) {
    JobState& job = *job_it->second;
    for (auto it = job.pending.begin(); it != job.pending.end();) {
      auto next = std::next(it);
      if (now - it->second.first_seen >= options_.step_timeout) {
        result.published.push_back(job.Publish(it, options_));
      }
      it = next;
    }
    // A store must have the job's last changes first: it serves the job from then on.
    const bool written = !options_.track_series_changes || !(job.dirty || job.series.HasChanges());
    if (job.pending.empty() && written && now - job.last_report >= options_.job_idle_ttl) {
      result.forgotten_jobs.push_back(job_it->first);
      jobs_.erase(job_it++);
    } else {
      ++job_it;
    }
  }
  return result;
}

absl::StatusOr<v1::JobSeries> StepReducer::Series(const std::string& job_id, size_t limit) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("no step reports for job ", job_id));
  const JobState& job = *it->second;
  v1::JobSeries out = job.counters;
  job.series.AppendTo(limit, out.mutable_steps());
  return out;
}

bool StepReducer::Tracks(const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  return jobs_.contains(job_id);
}

absl::Status StepReducer::Restore(StoredJob stored) {
  const std::string id = stored.counters.job_id();
  if (id.empty()) return absl::InvalidArgumentError("restoring a job: its counters name no job_id");
  auto state = std::make_unique<JobState>(options_);
  state->series = DownsampledSeries::FromPoints(SeriesOptions(options_), std::move(stored.points));
  state->counters = std::move(stored.counters);
  state->counters.clear_steps();
  state->generation = state->counters.generation();
  state->last_report = stored.last_report;
  if (std::optional<std::pair<int32_t, int64_t>> newest = state->series.Newest();
      newest.has_value() && newest->first == state->generation) {
    state->published_floor = newest->second;
  }
  absl::MutexLock lock(&mu_);
  if (jobs_.contains(id)) return absl::AlreadyExistsError(absl::StrCat("job ", id, " is tracked already"));
  if (jobs_.size() >= options_.max_jobs) {
    return absl::ResourceExhaustedError(
        absl::StrCat("restoring job ", id, ": already tracking ", jobs_.size(), " jobs, the limit"));
  }
  jobs_.emplace(id, std::move(state));
  return absl::OkStatus();
}

std::vector<SeriesChanges> StepReducer::TakeSeriesChanges() {
  std::vector<SeriesChanges> out;
  absl::MutexLock lock(&mu_);
  if (!options_.track_series_changes) return out;
  for (auto& [id, job] : jobs_) {
    if (job->dirty || job->series.HasChanges()) out.push_back(job->TakeChanges(id));
  }
  return out;
}

absl::StatusOr<SeriesChanges> StepReducer::SeriesSnapshot(const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("no step reports for job ", job_id));
  const JobState& job = *it->second;
  SeriesChanges out{job_id, job.counters, job.last_report, {}, /*replace=*/true};
  out.points.upserted = job.series.AllPoints();
  return out;
}

std::vector<std::string> StepReducer::Jobs() const {
  std::vector<std::string> ids;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, job] : jobs_) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace gradsync::telemetry

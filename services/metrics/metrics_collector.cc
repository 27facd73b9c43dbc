#include "metrics_collector.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "gradsync/core/log.h"

namespace gradsync::metrics {

MetricsCollector::MetricsCollector(telemetry::StepReducerOptions options, TrainingMetrics* metrics)
    : job_idle_ttl_(options.job_idle_ttl),
      max_jobs_(options.max_jobs),
      reducer_(std::move(options)),
      metrics_(metrics) {}

absl::Status MetricsCollector::UseStore(SeriesStore* store) {
  store_ = store;
  auto jobs = store_->LoadReportedSince(absl::Now() - job_idle_ttl_, max_jobs_);
  if (!jobs.ok()) return jobs.status();
  for (telemetry::StoredJob& job : *jobs) {
    const std::string id = job.counters.job_id();
    if (absl::Status s = reducer_.Restore(std::move(job)); !s.ok()) {
      GS_LOG(WARNING) << "job " << id << ": " << s;
    }
  }
  GS_LOG(INFO) << "series database " << store_->path() << ": took up " << jobs->size() << " jobs that reported within "
               << absl::FormatDuration(job_idle_ttl_);
  return absl::OkStatus();
}

void MetricsCollector::TakeUpStored(const std::string& job_id) {
  absl::MutexLock lock(&store_mu_);
  if (reducer_.Tracks(job_id)) return;
  absl::StatusOr<telemetry::StoredJob> stored = store_->Load(job_id);
  if (stored.status().code() == absl::StatusCode::kNotFound) return;
  if (!stored.ok()) {
    GS_LOG(ERROR) << "job " << job_id << ": its stored series cannot be read, it starts again: " << stored.status();
    return;
  }
  // The job reports now: it is not idle.
  stored->last_report = absl::Now();
  if (absl::Status s = reducer_.Restore(*std::move(stored)); !s.ok() && !absl::IsAlreadyExists(s)) {
    GS_LOG(WARNING) << "job " << job_id << ": " << s;
  }
}

MetricsCollector::Flushed MetricsCollector::FlushToStore(const absl::flat_hash_set<std::string>& whole) {
  absl::MutexLock lock(&store_mu_);
  std::vector<telemetry::SeriesChanges> batch = reducer_.TakeSeriesChanges();
  for (const std::string& job : whole) {
    std::erase_if(batch, [&](const telemetry::SeriesChanges& c) { return c.job_id == job; });
    if (absl::StatusOr<telemetry::SeriesChanges> all = reducer_.SeriesSnapshot(job); all.ok()) {
      batch.push_back(*std::move(all));
    }
  }
  Flushed out;
  for (const telemetry::SeriesChanges& c : batch) out.jobs.push_back(c.job_id);
  if (!batch.empty()) out.status = store_->Apply(batch);
  return out;
}

absl::Status MetricsCollector::Ingest(const v1::StepReport& report) {
  // Before the reducer takes it: a report refused here changes nothing, as an invalid one.
  if (absl::Status room = metrics_->CheckRoomFor(report.job_id(), report.rank()); !room.ok()) return room;
  if (store_ != nullptr && !report.job_id().empty() && !reducer_.Tracks(report.job_id())) {
    TakeUpStored(report.job_id());
  }
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
  absl::StatusOr<v1::JobSeries> live = reducer_.Series(job_id, limit);
  if (live.ok() || store_ == nullptr || live.status().code() != absl::StatusCode::kNotFound) return live;
  absl::StatusOr<telemetry::StoredJob> stored = store_->Load(job_id);
  if (stored.status().code() == absl::StatusCode::kNotFound) return live.status();
  if (!stored.ok()) return stored.status();
  v1::JobSeries out = std::move(stored->counters);
  out.clear_steps();
  const size_t n = limit == 0 ? stored->points.size() : std::min(limit, stored->points.size());
  for (size_t i = stored->points.size() - n; i < stored->points.size(); ++i) {
    *out.add_steps() = std::move(stored->points[i].step);
  }
  return out;
}

v1::JobList MetricsCollector::Jobs() const {
  std::vector<std::string> ids = reducer_.Jobs();
  if (store_ != nullptr) {
    absl::StatusOr<std::vector<std::string>> stored = store_->JobIds();
    if (stored.ok()) {
      ids.insert(ids.end(), stored->begin(), stored->end());
    } else {
      GS_LOG(ERROR) << stored.status();
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
  v1::JobList list;
  for (std::string& id : ids) list.add_job_ids(std::move(id));
  return list;
}

}  // namespace gradsync::metrics

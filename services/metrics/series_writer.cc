#include "series_writer.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "gradsync/core/log.h"

namespace gradsync::metrics {

SeriesWriter::SeriesWriter(MetricsCollector* collector, SeriesStore* store, TrainingMetrics* metrics,
                           SeriesWriterOptions options)
    : collector_(collector), store_(store), metrics_(metrics), options_(std::move(options)) {}

SeriesWriter::~SeriesWriter() { Stop(); }

void SeriesWriter::Start() {
  thread_ = std::thread([this] { Run(); });
}

void SeriesWriter::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (thread_.joinable()) {
    stop_.Notify();
    thread_.join();
  }
  (void)Flush();
}

void SeriesWriter::Run() {
  absl::Time next_expiry = options_.clock();
  do {
    (void)Flush();
    if (options_.clock() >= next_expiry) {
      (void)Expire();
      next_expiry = options_.clock() + options_.retention_check_interval;
    }
  } while (!stop_.WaitForNotificationWithTimeout(options_.flush_interval));
}

absl::Status SeriesWriter::Flush() {
  MetricsCollector::Flushed flushed = collector_->FlushToStore(rewrite_);
  rewrite_.clear();
  if (flushed.jobs.empty()) return absl::OkStatus();
  metrics_->RecordStoreFlush(flushed.status.ok());
  if (!flushed.status.ok()) {
    rewrite_.insert(flushed.jobs.begin(), flushed.jobs.end());
    // Once per failing streak: a full disk would otherwise log every second.
    if (!failing_) {
      GS_LOG(ERROR) << flushed.status << "; the series stay in memory and are written once the database takes them";
    }
    failing_ = true;
    return flushed.status;
  }
  if (failing_) {
    GS_LOG(INFO) << "series database " << store_->path() << ": writes succeed again";
  }
  failing_ = false;
  return absl::OkStatus();
}

absl::StatusOr<size_t> SeriesWriter::Expire() {
  const std::vector<std::string> tracked = collector_->TrackedJobs();
  const absl::flat_hash_set<std::string> keep(tracked.begin(), tracked.end());
  absl::StatusOr<std::vector<std::string>> deleted =
      store_->DeleteReportedBefore(options_.clock() - options_.retention, keep);
  if (!deleted.ok()) {
    GS_LOG(ERROR) << deleted.status();
    return deleted.status();
  }
  if (!deleted->empty()) {
    metrics_->RecordExpiredJobs(deleted->size());
    GS_LOG(INFO) << "series database " << store_->path() << ": deleted " << deleted->size()
                 << " jobs without a report for " << absl::FormatDuration(options_.retention) << " (--retention)";
  }
  return deleted->size();
}

}  // namespace gradsync::metrics

// Moves the jobs' series from the collector to the series store in batches, on a thread of its
// own, so a step report never waits for the disk; and deletes stored jobs past their retention.
#pragma once

#include <functional>
#include <string>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "metrics_collector.h"
#include "series_store.h"
#include "training_metrics.h"

namespace gradsync::metrics {

struct SeriesWriterOptions {
  // A flush takes whatever changed since the last: at most this much is lost to kill -9.
  absl::Duration flush_interval = absl::Seconds(1);
  // A stored job the collector no longer tracks and that has not reported for this long is
  // deleted; checked at start and then every retention_check_interval.
  absl::Duration retention = absl::Hours(24 * 30);
  absl::Duration retention_check_interval = absl::Hours(1);
  std::function<absl::Time()> clock = [] { return absl::Now(); };
};

// Flush() and Expire() run on the writer's thread once Start() was called; before Start() or
// after Stop() the caller may run them itself.
class SeriesWriter {
 public:
  // The collector must track changes (StepReducerOptions::track_series_changes); all three must
  // outlive the writer.
  SeriesWriter(MetricsCollector* collector, SeriesStore* store, TrainingMetrics* metrics, SeriesWriterOptions options);
  ~SeriesWriter();  // Stop()

  void Start();
  // Flushes one last time and ends the thread. Idempotent.
  void Stop();

  // Writes what changed in one transaction. When the store refuses it, the jobs it held are
  // written whole at the next flush (the store keeps the last batch it committed). Returns the
  // store's error.
  absl::Status Flush();
  // Deletes stored jobs past retention; the number deleted.
  absl::StatusOr<size_t> Expire();

 private:
  void Run();

  MetricsCollector* const collector_;
  SeriesStore* const store_;
  TrainingMetrics* const metrics_;
  const SeriesWriterOptions options_;
  // Jobs a failed flush held: the next flush writes them whole (those still tracked; a job is
  // forgotten only once a flush took its last changes, which then failed only if the store did).
  absl::flat_hash_set<std::string> rewrite_;
  bool failing_ = false;
  absl::Notification stop_;
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace gradsync::metrics

// The jobs' series on disk: SQLite (WAL journal) under the metrics service's --state_dir, so a
// restarted service, even after kill -9, serves the curves it served before.
//
// Tables (meta.series_schema_version 1):
//   jobs(job_id PRIMARY KEY, counters, last_report_us)  counters: a JobSeries without steps;
//                                                       last_report_us: microseconds since 1970
//   points(job_id, id, generation, step, point)         one row per point of DownsampledSeries,
//                                                       by (job_id, id); point: a ReducedStep
// A row that does not parse is skipped with an error in the log, never served.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gradsync/core/sqlite_database.h"
#include "gradsync/telemetry/step_reducer.h"

struct sqlite3;

namespace gradsync::metrics {

// Thread-safe: every method may be called from any thread (one at a time reaches SQLite).
class SeriesStore {
 public:
  // Opens `path`, or creates it when there is none (the directory must exist), as
  // sqlite::Database::Open does; checks it whole (PRAGMA quick_check). Every error names the file: DATA_LOSS for a file
  // that is not SQLite, a database that is not a series database or is corrupt; FAILED_PRECONDITION for a schema newer
  // than this service's; UNAVAILABLE when it cannot be opened or written.
  static absl::StatusOr<std::unique_ptr<SeriesStore>> Open(const std::string& path);
  // Open, and when an existing file cannot be used: logs why, naming it, moves it (with its -wal
  // and -shm) aside to <path>.bad-<UTC time> and starts an empty database. An error only when the
  // file cannot be moved or a new one cannot be made.
  static absl::StatusOr<std::unique_ptr<SeriesStore>> OpenOrSetAside(const std::string& path);
  ~SeriesStore();

  SeriesStore(const SeriesStore&) = delete;
  SeriesStore& operator=(const SeriesStore&) = delete;

  const std::string& path() const { return path_; }

  // Writes every job's changes in one transaction: all of them or, on an error, none.
  absl::Status Apply(const std::vector<telemetry::SeriesChanges>& changes);
  // The jobs that reported at or after `since`, the most recent first, at most `max_jobs`.
  absl::StatusOr<std::vector<telemetry::StoredJob>> LoadReportedSince(absl::Time since, size_t max_jobs);
  // One job, its points in (generation, step) order; NOT_FOUND when none is stored.
  absl::StatusOr<telemetry::StoredJob> Load(const std::string& job_id);
  // The stored jobs' ids, sorted.
  absl::StatusOr<std::vector<std::string>> JobIds();
  // Deletes every job whose last report is before `cutoff`, but those in `keep`; returns their
  // ids.
  absl::StatusOr<std::vector<std::string>> DeleteReportedBefore(absl::Time cutoff,
                                                                const absl::flat_hash_set<std::string>& keep);

 private:
  explicit SeriesStore(std::unique_ptr<sqlite::Database> database)
      : database_(std::move(database)), db_(database_->get()), path_(database_->path()) {}

  absl::Status ApplyOne(const telemetry::SeriesChanges& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<telemetry::DownsampledSeries::Point>> LoadPoints(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Exec(const char* sql, const std::string& what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The status of SQLite result `rc` while doing `what`, naming the database.
  absl::Status Error(int rc, const std::string& what) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  // Its lifecycle (gradsync/core/sqlite_database.h); db_ is its connection.
  const std::unique_ptr<sqlite::Database> database_ ABSL_PT_GUARDED_BY(mu_);
  sqlite3* const db_ ABSL_PT_GUARDED_BY(mu_);
  const std::string path_;
};

}  // namespace gradsync::metrics

// The job logs on disk: SQLite (WAL) at `<state dir>/job_logs.db`, so that `gradsync logs` reads
// a job's lines after a coordinator restart. JobLogStore writes what it keeps here, within the
// same byte bounds (a line it drops from memory leaves the file in the same transaction), and
// reads it back when it starts.
//
// Tables (meta.job_logs_schema_version 1):
//   jobs(job_id PRIMARY KEY, last_seq, dropped)
//   lines(job_id, seq, line)   PRIMARY KEY (job_id, seq); line: a v1::LogLine
// A row that does not parse is skipped with an error in the log, never served.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/core/sqlite_database.h"
#include "gradsync/v1/logs.pb.h"

namespace gradsync::coordinator {

// One job's lines as the journal holds them.
struct JournaledJob {
  std::string job_id;
  int64_t last_seq = 0;
  int64_t dropped = 0;
  std::vector<v1::LogLine> lines;  // oldest first
};

// What one Append changed for a job: the lines it added, and the first seq the job still keeps.
struct JobLogChange {
  std::string job_id;
  int64_t last_seq = 0;
  int64_t dropped = 0;
  int64_t first_kept_seq = 0;
  std::vector<v1::LogLine> added;
};

// Called from JobLogStore under its lock: one thread at a time.
class JobLogJournal {
 public:
  // Opens `path`, or creates it; a file that is not a job-log database or is corrupt is moved
  // aside (`<path>.bad-<time>`, logged) and an empty one started. An error only when neither works.
  static absl::StatusOr<std::unique_ptr<JobLogJournal>> Open(const std::string& path);

  // Writes `changes` in one transaction: all of them or none.
  absl::Status Write(const std::vector<JobLogChange>& changes);
  // Every job's lines, oldest first.
  absl::StatusOr<std::vector<JournaledJob>> Load();

  const std::string& path() const { return db_->path(); }

 private:
  explicit JobLogJournal(std::unique_ptr<sqlite::Database> db) : db_(std::move(db)) {}
  absl::Status WriteOne(const JobLogChange& change);

  std::unique_ptr<sqlite::Database> db_;
};

}  // namespace gradsync::coordinator

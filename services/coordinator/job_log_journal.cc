#include "job_log_journal.h"

#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "gradsync/core/log.h"
#include "gradsync/core/sqlite.h"

namespace gradsync::coordinator {
namespace {

sqlite::Schema JournalSchema() {
  sqlite::Schema schema;
  schema.what = "job log database";
  schema.program = "coordinator";
  schema.version_key = "job_logs_schema_version";
  schema.version = 1;
  schema.quick_check = true;
  schema.tables =
      "CREATE TABLE IF NOT EXISTS jobs(job_id TEXT PRIMARY KEY, last_seq INTEGER NOT NULL, dropped INTEGER NOT NULL);"
      "CREATE TABLE IF NOT EXISTS lines(job_id TEXT NOT NULL, seq INTEGER NOT NULL, line BLOB NOT NULL,"
      " PRIMARY KEY(job_id, seq)) WITHOUT ROWID;";
  return schema;
}

}  // namespace

absl::StatusOr<std::unique_ptr<JobLogJournal>> JobLogJournal::Open(const std::string& path) {
  absl::StatusOr<std::unique_ptr<sqlite::Database>> db = sqlite::Database::Open(path, JournalSchema());
  std::error_code ec;
  if (!db.ok() && std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found) {
    absl::StatusOr<std::string> aside = sqlite::SetAside(path);
    if (!aside.ok()) return absl::UnavailableError(absl::StrCat(db.status().message(), "; and ", aside.status().message()));
    GS_LOG(ERROR) << db.status() << "; moved it to " << *aside
                  << " and started an empty job log database: the lines it held are not served";
    db = sqlite::Database::Open(path, JournalSchema());
  }
  if (!db.ok()) return db.status();
  return std::unique_ptr<JobLogJournal>(new JobLogJournal(*std::move(db)));
}

absl::Status JobLogJournal::Write(const std::vector<JobLogChange>& changes) {
  if (changes.empty()) return absl::OkStatus();
  return db_->InTransaction([&]() -> absl::Status {
    for (const JobLogChange& c : changes) {
      if (absl::Status s = WriteOne(c); !s.ok()) return s;
    }
    return absl::OkStatus();
  });
}

absl::Status JobLogJournal::WriteOne(const JobLogChange& change) {
  const std::string what = absl::StrCat("writing the log lines of job ", change.job_id);
  sqlite::Statement job(db_->get(),
                        "INSERT INTO jobs(job_id, last_seq, dropped) VALUES (?1, ?2, ?3) ON CONFLICT(job_id) "
                        "DO UPDATE SET last_seq = excluded.last_seq, dropped = excluded.dropped;");
  sqlite::Statement drop(db_->get(), "DELETE FROM lines WHERE job_id = ?1 AND seq < ?2;");
  sqlite::Statement put(db_->get(), "INSERT OR REPLACE INTO lines(job_id, seq, line) VALUES (?1, ?2, ?3);");
  for (sqlite::Statement* stmt : {&job, &drop, &put}) {
    if (!stmt->ok()) return db_->Error(stmt->rc(), what);
  }
  job.Text(1, change.job_id);
  job.Int(2, change.last_seq);
  job.Int(3, change.dropped);
  if (const int rc = job.Run(); rc != SQLITE_DONE) return db_->Error(rc, what);
  for (const v1::LogLine& line : change.added) {
    // A line added and dropped within one batch never reaches the file.
    if (line.seq() < change.first_kept_seq) continue;
    put.Text(1, change.job_id);
    put.Int(2, line.seq());
    put.Blob(3, line.SerializeAsString());
    if (const int rc = put.Run(); rc != SQLITE_DONE) return db_->Error(rc, what);
  }
  drop.Text(1, change.job_id);
  drop.Int(2, change.first_kept_seq);
  if (const int rc = drop.Run(); rc != SQLITE_DONE) return db_->Error(rc, what);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<JournaledJob>> JobLogJournal::Load() {
  std::map<std::string, JournaledJob> jobs;
  sqlite::Statement read_jobs(db_->get(), "SELECT job_id, last_seq, dropped FROM jobs;");
  sqlite::Statement read_lines(db_->get(), "SELECT job_id, line FROM lines ORDER BY job_id, seq;");
  for (sqlite::Statement* stmt : {&read_jobs, &read_lines}) {
    if (!stmt->ok()) return db_->Error(stmt->rc(), "reading the job logs");
  }
  int rc;
  while ((rc = sqlite3_step(read_jobs.get())) == SQLITE_ROW) {
    JournaledJob& j = jobs[sqlite::ColumnText(read_jobs.get(), 0)];
    j.job_id = sqlite::ColumnText(read_jobs.get(), 0);
    j.last_seq = sqlite3_column_int64(read_jobs.get(), 1);
    j.dropped = sqlite3_column_int64(read_jobs.get(), 2);
  }
  if (rc != SQLITE_DONE) return db_->Error(rc, "reading the job logs");
  while ((rc = sqlite3_step(read_lines.get())) == SQLITE_ROW) {
    const std::string id = sqlite::ColumnText(read_lines.get(), 0);
    v1::LogLine line;
    const void* blob = sqlite3_column_blob(read_lines.get(), 1);
    const int size = sqlite3_column_bytes(read_lines.get(), 1);
    auto it = jobs.find(id);
    if (it == jobs.end() || !line.ParseFromArray(blob, size)) {
      GS_LOG(ERROR) << path() << ": a log line of job " << id << " does not parse; skipped";
      continue;
    }
    it->second.lines.push_back(std::move(line));
  }
  if (rc != SQLITE_DONE) return db_->Error(rc, "reading the job logs");
  std::vector<JournaledJob> out;
  for (auto& [id, job] : jobs) out.push_back(std::move(job));
  return out;
}

}  // namespace gradsync::coordinator

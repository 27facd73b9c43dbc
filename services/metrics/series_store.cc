#include "series_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "gradsync/core/log.h"
#include "gradsync/core/sqlite.h"
#include "gradsync/core/sqlite_database.h"

namespace gradsync::metrics {
namespace {

constexpr int64_t kSchemaVersion = 1;

template <typename M>
bool ParseColumn(sqlite3_stmt* stmt, int column, M* message) {
  return message->ParseFromArray(sqlite3_column_blob(stmt, column), sqlite3_column_bytes(stmt, column));
}

std::string Printable(const std::string& id) { return absl::CHexEscape(id.substr(0, 64)); }

int64_t Micros(absl::Time t) { return absl::ToUnixMicros(t); }

sqlite::Schema SeriesSchema() {
  sqlite::Schema schema;
  schema.what = "series database";
  schema.program = "metrics service";
  schema.version_key = "series_schema_version";
  schema.version = kSchemaVersion;
  schema.quick_check = true;
  schema.tables =
      "CREATE TABLE IF NOT EXISTS jobs ("
      "  job_id TEXT PRIMARY KEY, counters BLOB NOT NULL, last_report_us INTEGER NOT NULL);"
      "CREATE INDEX IF NOT EXISTS jobs_by_last_report ON jobs(last_report_us);"
      "CREATE TABLE IF NOT EXISTS points ("
      "  job_id TEXT NOT NULL, id INTEGER NOT NULL, generation INTEGER NOT NULL, step INTEGER NOT NULL,"
      "  point BLOB NOT NULL, PRIMARY KEY (job_id, id)) WITHOUT ROWID;";
  return schema;
}

}  // namespace

SeriesStore::~SeriesStore() = default;

absl::Status SeriesStore::Error(int rc, const std::string& what) const { return database_->Error(rc, what); }

absl::Status SeriesStore::Exec(const char* sql, const std::string& what) { return database_->Exec(sql, what); }

absl::StatusOr<std::unique_ptr<SeriesStore>> SeriesStore::Open(const std::string& path) {
  absl::StatusOr<std::unique_ptr<sqlite::Database>> database = sqlite::Database::Open(path, SeriesSchema());
  if (!database.ok()) return database.status();
  return std::unique_ptr<SeriesStore>(new SeriesStore(*std::move(database)));
}

absl::StatusOr<std::unique_ptr<SeriesStore>> SeriesStore::OpenOrSetAside(const std::string& path) {
  absl::StatusOr<std::unique_ptr<SeriesStore>> store = Open(path);
  std::error_code ec;
  if (store.ok() || std::filesystem::symlink_status(path, ec).type() == std::filesystem::file_type::not_found) {
    return store;
  }
  absl::StatusOr<std::string> aside = sqlite::SetAside(path);
  if (!aside.ok()) return absl::UnavailableError(absl::StrCat(store.status().message(), "; and ", aside.status().message()));
  GS_LOG(ERROR) << store.status() << "; moved it to " << *aside
                << " and started an empty series database: the series it held are not served";
  return Open(path);
}

absl::Status SeriesStore::Apply(const std::vector<telemetry::SeriesChanges>& changes) {
  if (changes.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Exec("BEGIN IMMEDIATE;", "starting a transaction"); !s.ok()) return s;
  absl::Status s;
  for (const telemetry::SeriesChanges& job : changes) {
    if (s = ApplyOne(job); !s.ok()) break;
  }
  if (s.ok()) s = Exec("COMMIT;", "committing");
  // After an I/O error SQLite may have rolled back already; then this finds no transaction.
  if (!s.ok()) sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
  return s;
}

absl::Status SeriesStore::ApplyOne(const telemetry::SeriesChanges& job) {
  const std::string what = absl::StrCat("writing the series of job ", Printable(job.job_id));
  sqlite::Statement put_job(
      db_,
      "INSERT INTO jobs(job_id, counters, last_report_us) VALUES (?1, ?2, ?3) "
      "ON CONFLICT(job_id) DO UPDATE SET counters = excluded.counters, last_report_us = excluded.last_report_us;");
  sqlite::Statement drop_all(db_, "DELETE FROM points WHERE job_id = ?1;");
  sqlite::Statement drop(db_, "DELETE FROM points WHERE job_id = ?1 AND id = ?2;");
  sqlite::Statement put(
      db_, "INSERT OR REPLACE INTO points(job_id, id, generation, step, point) VALUES (?1, ?2, ?3, ?4, ?5);");
  for (sqlite::Statement* stmt : {&put_job, &drop_all, &drop, &put}) {
    if (!stmt->ok()) return Error(stmt->rc(), what);
  }
  v1::JobSeries counters = job.counters;
  counters.clear_steps();
  put_job.Text(1, job.job_id);
  put_job.Blob(2, counters.SerializeAsString());
  put_job.Int(3, Micros(job.last_report));
  if (const int rc = put_job.Run(); rc != SQLITE_DONE) return Error(rc, what);
  if (job.replace) {
    drop_all.Text(1, job.job_id);
    if (const int rc = drop_all.Run(); rc != SQLITE_DONE) return Error(rc, what);
  }
  for (int64_t id : job.points.removed) {
    drop.Text(1, job.job_id);
    drop.Int(2, id);
    if (const int rc = drop.Run(); rc != SQLITE_DONE) return Error(rc, what);
  }
  for (const telemetry::DownsampledSeries::Point& p : job.points.upserted) {
    put.Text(1, job.job_id);
    put.Int(2, p.id);
    put.Int(3, p.step.generation());
    put.Int(4, p.step.step());
    put.Blob(5, p.step.SerializeAsString());
    if (const int rc = put.Run(); rc != SQLITE_DONE) return Error(rc, what);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<telemetry::DownsampledSeries::Point>> SeriesStore::LoadPoints(const std::string& job_id) {
  sqlite::Statement rows(db_, "SELECT id, point FROM points WHERE job_id = ?1 ORDER BY generation, step;");
  if (!rows.ok()) return Error(rows.rc(), "reading points");
  rows.Text(1, job_id);
  std::vector<telemetry::DownsampledSeries::Point> points;
  int rc;
  while ((rc = sqlite3_step(rows.get())) == SQLITE_ROW) {
    telemetry::DownsampledSeries::Point p;
    p.id = sqlite3_column_int64(rows.get(), 0);
    if (!ParseColumn(rows.get(), 1, &p.step)) {
      GS_LOG(ERROR) << "series database " << path_ << ": point " << p.id << " of job " << Printable(job_id)
                    << " does not parse; skipped";
      continue;
    }
    points.push_back(std::move(p));
  }
  if (rc != SQLITE_DONE) return Error(rc, absl::StrCat("reading the points of job ", Printable(job_id)));
  return points;
}

absl::StatusOr<std::vector<telemetry::StoredJob>> SeriesStore::LoadReportedSince(absl::Time since, size_t max_jobs) {
  absl::MutexLock lock(&mu_);
  sqlite::Statement rows(db_,
                         "SELECT job_id, counters, last_report_us FROM jobs WHERE last_report_us >= ?1 "
                         "ORDER BY last_report_us DESC LIMIT ?2;");
  if (!rows.ok()) return Error(rows.rc(), "reading jobs");
  rows.Int(1, Micros(since));
  rows.Int(2, static_cast<int64_t>(std::min<size_t>(max_jobs, INT64_MAX)));
  std::vector<telemetry::StoredJob> jobs;
  int rc;
  while ((rc = sqlite3_step(rows.get())) == SQLITE_ROW) {
    const std::string id = sqlite::ColumnText(rows.get(), 0);
    telemetry::StoredJob job;
    if (!ParseColumn(rows.get(), 1, &job.counters) || job.counters.job_id() != id) {
      GS_LOG(ERROR) << "series database " << path_ << ": the row of job " << Printable(id)
                    << " holds no counters of that job; skipped";
      continue;
    }
    job.last_report = absl::FromUnixMicros(sqlite3_column_int64(rows.get(), 2));
    jobs.push_back(std::move(job));
  }
  if (rc != SQLITE_DONE) return Error(rc, "reading jobs");
  for (telemetry::StoredJob& job : jobs) {
    auto points = LoadPoints(job.counters.job_id());
    if (!points.ok()) return points.status();
    job.points = *std::move(points);
  }
  return jobs;
}

absl::StatusOr<telemetry::StoredJob> SeriesStore::Load(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  sqlite::Statement row(db_, "SELECT counters, last_report_us FROM jobs WHERE job_id = ?1;");
  if (!row.ok()) return Error(row.rc(), "reading a job");
  row.Text(1, job_id);
  const int rc = sqlite3_step(row.get());
  if (rc == SQLITE_DONE) return absl::NotFoundError(absl::StrCat("no stored series of job ", job_id));
  if (rc != SQLITE_ROW) return Error(rc, absl::StrCat("reading job ", Printable(job_id)));
  telemetry::StoredJob job;
  if (!ParseColumn(row.get(), 0, &job.counters) || job.counters.job_id() != job_id) {
    return absl::DataLossError(absl::StrCat("series database ", path_, ": the row of job ", Printable(job_id),
                                            " holds no counters of that job"));
  }
  job.last_report = absl::FromUnixMicros(sqlite3_column_int64(row.get(), 1));
  auto points = LoadPoints(job_id);
  if (!points.ok()) return points.status();
  job.points = *std::move(points);
  return job;
}

absl::StatusOr<std::vector<std::string>> SeriesStore::JobIds() {
  absl::MutexLock lock(&mu_);
  sqlite::Statement rows(db_, "SELECT job_id FROM jobs ORDER BY job_id;");
  if (!rows.ok()) return Error(rows.rc(), "listing jobs");
  std::vector<std::string> ids;
  int rc;
  while ((rc = sqlite3_step(rows.get())) == SQLITE_ROW) ids.push_back(sqlite::ColumnText(rows.get(), 0));
  if (rc != SQLITE_DONE) return Error(rc, "listing jobs");
  return ids;
}

absl::StatusOr<std::vector<std::string>> SeriesStore::DeleteReportedBefore(
    absl::Time cutoff, const absl::flat_hash_set<std::string>& keep) {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> expired;
  {
    sqlite::Statement rows(db_, "SELECT job_id FROM jobs WHERE last_report_us < ?1;");
    if (!rows.ok()) return Error(rows.rc(), "finding expired jobs");
    rows.Int(1, Micros(cutoff));
    int rc;
    while ((rc = sqlite3_step(rows.get())) == SQLITE_ROW) {
      std::string id = sqlite::ColumnText(rows.get(), 0);
      if (!keep.contains(id)) expired.push_back(std::move(id));
    }
    if (rc != SQLITE_DONE) return Error(rc, "finding expired jobs");
  }
  if (expired.empty()) return expired;
  if (absl::Status s = Exec("BEGIN IMMEDIATE;", "starting a transaction"); !s.ok()) return s;
  sqlite::Statement drop_job(db_, "DELETE FROM jobs WHERE job_id = ?1;");
  sqlite::Statement drop_points(db_, "DELETE FROM points WHERE job_id = ?1;");
  absl::Status s;
  for (const std::string& id : expired) {
    for (sqlite::Statement* stmt : {&drop_points, &drop_job}) {
      if (!stmt->ok()) {
        s = Error(stmt->rc(), "deleting expired jobs");
        break;
      }
      stmt->Text(1, id);
      if (const int rc = stmt->Run(); rc != SQLITE_DONE) {
        s = Error(rc, absl::StrCat("deleting expired job ", Printable(id)));
        break;
      }
    }
    if (!s.ok()) break;
  }
  if (s.ok()) s = Exec("COMMIT;", "committing");
  if (!s.ok()) {
    sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
    return s;
  }
  return expired;
}

}  // namespace gradsync::metrics

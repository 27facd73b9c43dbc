#include "sqlite_job_store.h"

#include <sqlite3.h>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gradsync/core/log.h"
#include "gradsync/core/sqlite.h"
#include "gradsync/core/sqlite_database.h"

namespace gradsync::coordinator {
namespace {

// Version 1: tables meta, jobs and quarantine. Version 2: jobs.running, the record of each running
// generation (GenerationRecord) that a coordinator started later adopts; a version 1 database is
// upgraded when it opens.
constexpr int64_t kSchemaVersion = 2;
constexpr size_t kMaxIdInMessages = 64;

// Whether the column holds a job that parses and has an id.
bool ParseRow(sqlite3_stmt* stmt, int column, v1::Job* job) {
  const void* blob = sqlite3_column_blob(stmt, column);
  return job->ParseFromArray(blob, sqlite3_column_bytes(stmt, column)) && !job->id().empty();
}

// An id from a row, fit for a log line whatever the row holds.
std::string Printable(const std::string& id) { return absl::CHexEscape(id.substr(0, kMaxIdInMessages)); }

// The jobs table, and beside each job the record of its running generation (version 2).
sqlite::Schema JobSchema() {
  sqlite::Schema schema;
  schema.what = "database";
  schema.program = "coordinator";
  schema.version_key = "schema_version";
  schema.version = kSchemaVersion;
  schema.pragmas = {"PRAGMA foreign_keys=ON;"};
  schema.tables =
      "CREATE TABLE IF NOT EXISTS jobs ("
      "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
      "  id TEXT NOT NULL UNIQUE,"
      "  state INTEGER NOT NULL,"
      "  job BLOB NOT NULL,"
      "  running BLOB);"
      "CREATE TABLE IF NOT EXISTS quarantine ("
      "  seq INTEGER, id TEXT, state INTEGER, job BLOB, reason TEXT NOT NULL, time TEXT NOT NULL);";
  // Version 1 to 2: the running column (running generations are kept from then on).
  schema.upgrade = [](sqlite::Database& db, int64_t) {
    return db.Exec("ALTER TABLE jobs ADD COLUMN running BLOB;", "adding jobs.running");
  };
  return schema;
}

}  // namespace

SqliteJobStore::SqliteJobStore(std::unique_ptr<sqlite::Database> database)
    : database_(std::move(database)), db_(database_->get()), path_(database_->path()) {}

SqliteJobStore::~SqliteJobStore() = default;

absl::Status SqliteJobStore::Error(int rc, const std::string& what) const { return database_->Error(rc, what); }

absl::Status SqliteJobStore::Exec(const char* sql, const std::string& what) { return database_->Exec(sql, what); }

absl::Status SqliteJobStore::InTransaction(const std::function<absl::Status()>& body) {
  return database_->InTransaction(body);
}

absl::StatusOr<std::unique_ptr<SqliteJobStore>> SqliteJobStore::Open(const std::string& path) {
  absl::StatusOr<std::unique_ptr<sqlite::Database>> database = sqlite::Database::Open(path, JobSchema());
  if (!database.ok()) return database.status();
  std::unique_ptr<SqliteJobStore> store(new SqliteJobStore(*std::move(database)));
  if (absl::Status s = store->QuarantineBadRows(); !s.ok()) return s;
  return store;
}

absl::Status SqliteJobStore::QuarantineBadRows() {
  std::vector<std::pair<int64_t, std::string>> bad;  // seq, reason
  sqlite::Statement rows(db_, "SELECT seq, id, job FROM jobs ORDER BY seq;");
  int rc = rows.ok() ? SQLITE_OK : rows.rc();
  while (rows.ok() && (rc = sqlite3_step(rows.get())) == SQLITE_ROW) {
    const int64_t seq = sqlite3_column_int64(rows.get(), 0);
    const std::string id = sqlite::ColumnText(rows.get(), 1);
    v1::Job job;
    if (!ParseRow(rows.get(), 2, &job)) {
      bad.emplace_back(seq, absl::StrCat("job row ", seq, " (id \"", Printable(id), "\") holds no job that parses"));
    } else if (job.id() != id) {
      bad.emplace_back(
          seq, absl::StrCat("job row ", seq, " (id \"", Printable(id), "\") holds job \"", Printable(job.id()), "\""));
    }
  }
  if (rc != SQLITE_DONE) return Error(rc, "reading the jobs table");
  for (const auto& [seq, reason] : bad) {
    if (absl::Status s = Quarantine(seq, reason); !s.ok()) return s;
    GS_LOG(ERROR) << "database " << path_ << ": " << reason << "; moved to table quarantine";
  }
  return absl::OkStatus();
}

absl::Status SqliteJobStore::Quarantine(int64_t seq, const std::string& reason) {
  return InTransaction([&]() -> absl::Status {
    sqlite::Statement move(db_,
                           "INSERT INTO quarantine(seq, id, state, job, reason, time) "
                           "SELECT seq, id, state, job, ?2, datetime('now') FROM jobs WHERE seq = ?1;");
    sqlite3_bind_int64(move.get(), 1, seq);
    move.Text(2, reason);
    int rc = move.ok() ? sqlite3_step(move.get()) : move.rc();
    if (rc != SQLITE_DONE) return Error(rc, absl::StrCat("quarantining job row ", seq));
    sqlite::Statement drop(db_, "DELETE FROM jobs WHERE seq = ?1;");
    sqlite3_bind_int64(drop.get(), 1, seq);
    rc = drop.ok() ? sqlite3_step(drop.get()) : drop.rc();
    if (rc != SQLITE_DONE) return Error(rc, absl::StrCat("quarantining job row ", seq));
    return absl::OkStatus();
  });
}

absl::Status SqliteJobStore::Insert(const v1::Job& job) {
  sqlite::Statement stmt(db_, "INSERT INTO jobs(id, state, job) VALUES (?1, ?2, ?3);");
  if (!stmt.ok()) return Error(stmt.rc(), absl::StrCat("inserting job ", job.id()));
  const std::string blob = job.SerializeAsString();
  stmt.Text(1, job.id());
  sqlite3_bind_int(stmt.get(), 2, job.state());
  sqlite3_bind_blob(stmt.get(), 3, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
  const int rc = sqlite3_step(stmt.get());
  if ((rc & 0xff) == SQLITE_CONSTRAINT) return absl::AlreadyExistsError(absl::StrCat("job ", job.id(), " exists"));
  if (rc != SQLITE_DONE) return Error(rc, absl::StrCat("inserting job ", job.id()));
  return absl::OkStatus();
}

absl::Status SqliteJobStore::Update(const v1::Job& job) { return UpdateWithGeneration(job, v1::GenerationRecord()); }

absl::Status SqliteJobStore::UpdateWithGeneration(const v1::Job& job, const v1::GenerationRecord& running) {
  sqlite::Statement stmt(db_, "UPDATE jobs SET state = ?2, job = ?3, running = ?4 WHERE id = ?1;");
  if (!stmt.ok()) return Error(stmt.rc(), absl::StrCat("updating job ", job.id()));
  const std::string blob = job.SerializeAsString();
  stmt.Text(1, job.id());
  sqlite3_bind_int(stmt.get(), 2, job.state());
  sqlite3_bind_blob(stmt.get(), 3, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
  const std::string record = running.SerializeAsString();
  if (running.ranks_size() > 0) {
    sqlite3_bind_blob(stmt.get(), 4, record.data(), static_cast<int>(record.size()), SQLITE_TRANSIENT);
  } else {
    sqlite3_bind_null(stmt.get(), 4);
  }
  if (const int rc = sqlite3_step(stmt.get()); rc != SQLITE_DONE) {
    return Error(rc, absl::StrCat("updating job ", job.id()));
  }
  if (sqlite3_changes(db_) == 0) return absl::NotFoundError(absl::StrCat("job ", job.id(), " not found"));
  return absl::OkStatus();
}

absl::Status SqliteJobStore::Probe(size_t bytes) {
  return InTransaction([&]() -> absl::Status {
    sqlite::Statement put(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES ('write_probe', zeroblob(?1));");
    sqlite3_bind_int64(put.get(), 1, static_cast<int64_t>(bytes));
    int rc = put.ok() ? sqlite3_step(put.get()) : put.rc();
    if (rc != SQLITE_DONE) return Error(rc, "probing with a write");
    sqlite::Statement drop(db_, "DELETE FROM meta WHERE key = 'write_probe';");
    rc = drop.ok() ? sqlite3_step(drop.get()) : drop.rc();
    if (rc != SQLITE_DONE) return Error(rc, "probing with a write");
    return absl::OkStatus();
  });
}

std::optional<v1::Job> SqliteJobStore::Get(const std::string& id) const {
  sqlite::Statement stmt(db_, "SELECT job FROM jobs WHERE id = ?1;");
  if (!stmt.ok()) return std::nullopt;
  stmt.Text(1, id);
  if (sqlite3_step(stmt.get()) != SQLITE_ROW) return std::nullopt;
  v1::Job job;
  if (ParseRow(stmt.get(), 0, &job) && job.id() == id) return job;
  GS_LOG(ERROR) << "database " << path_ << ": the row of job " << Printable(id) << " holds no such job";
  return std::nullopt;
}

absl::StatusOr<std::vector<v1::Job>> SqliteJobStore::List(const std::string& after_id, int limit) const {
  sqlite::Statement stmt(db_,
                         "SELECT id, job FROM jobs WHERE seq > COALESCE((SELECT seq FROM jobs WHERE id = ?1), 0) "
                         "ORDER BY seq LIMIT ?2;");
  if (!stmt.ok()) return Error(stmt.rc(), "listing jobs");
  stmt.Text(1, after_id);
  sqlite3_bind_int(stmt.get(), 2, limit);
  std::vector<v1::Job> out;
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    v1::Job job;
    const std::string id = sqlite::ColumnText(stmt.get(), 0);
    if (!ParseRow(stmt.get(), 1, &job) || job.id() != id) {
      return absl::DataLossError(absl::StrCat("database ", path_, ": the row of job \"", Printable(id),
                                              "\" holds no such job (it is quarantined when the database is opened)"));
    }
    out.push_back(std::move(job));
  }
  if (rc != SQLITE_DONE) return Error(rc, "listing jobs");
  return out;
}

absl::StatusOr<std::map<std::string, v1::GenerationRecord>> SqliteJobStore::ListGenerations() const {
  sqlite::Statement stmt(db_, "SELECT id, running FROM jobs WHERE running IS NOT NULL ORDER BY seq;");
  if (!stmt.ok()) return Error(stmt.rc(), "listing running generations");
  std::map<std::string, v1::GenerationRecord> out;
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    const std::string id = sqlite::ColumnText(stmt.get(), 0);
    v1::GenerationRecord record;
    if (!record.ParseFromArray(sqlite3_column_blob(stmt.get(), 1), sqlite3_column_bytes(stmt.get(), 1))) {
      GS_LOG(ERROR) << "database " << path_ << ": the running generation of job " << Printable(id)
                    << " does not parse; the job restarts instead";
      continue;
    }
    out.emplace(id, std::move(record));
  }
  if (rc != SQLITE_DONE) return Error(rc, "listing running generations");
  return out;
}

}  // namespace gradsync::coordinator

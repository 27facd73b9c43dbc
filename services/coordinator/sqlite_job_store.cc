#include "sqlite_job_store.h"

#include <sqlite3.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gradsync/core/log.h"
#include "gradsync/core/sqlite.h"

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

// SQLite takes an empty file for a new database and says little about other files: an existing
// file must start as a SQLite database does.
absl::Status CheckFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::FailedPreconditionError(absl::StrCat("database ", path, " is not a regular file"));
  }
  if (std::filesystem::file_size(path, ec) == 0 && !ec) {
    return absl::DataLossError(absl::StrCat(
        "database ", path, " is empty (0 bytes), not a gradsync database; move it away to start with no jobs"));
  }
  return sqlite::CheckHeader(path, "database");
}

}  // namespace

SqliteJobStore::SqliteJobStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

SqliteJobStore::~SqliteJobStore() { sqlite3_close(db_); }

absl::Status SqliteJobStore::Error(int rc, const std::string& what) const {
  return absl::Status(sqlite::StatusCodeOf(rc),
                      absl::StrCat("database ", path_, ": ", what, ": ", sqlite3_errmsg(db_)));
}

absl::Status SqliteJobStore::Exec(const char* sql, const std::string& what) {
  if (const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); rc != SQLITE_OK) return Error(rc, what);
  return absl::OkStatus();
}

absl::Status SqliteJobStore::InTransaction(const std::function<absl::Status()>& body) {
  if (absl::Status s = Exec("BEGIN IMMEDIATE;", "starting a transaction"); !s.ok()) return s;
  absl::Status s = body();
  if (s.ok()) s = Exec("COMMIT;", "committing");
  // After an I/O error SQLite may have rolled back already; then this finds no transaction.
  if (!s.ok()) sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
  return s;
}

absl::StatusOr<std::unique_ptr<SqliteJobStore>> SqliteJobStore::Connect(const std::string& path, bool create) {
  absl::StatusOr<sqlite3*> db = sqlite::Open(path, create, "database");
  if (!db.ok()) return db.status();
  return std::unique_ptr<SqliteJobStore>(new SqliteJobStore(*db, path));
}

absl::Status SqliteJobStore::CreateFresh(const std::string& path) {
  const std::string building = path + ".new";
  std::error_code ec;
  // Left by a coordinator that crashed while building it.
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(building + suffix, ec);
  {
    auto store = Connect(building, /*create=*/true);
    if (!store.ok()) return store.status();
    if (absl::Status s = (*store)->Init(); !s.ok()) return s;
  }
  // Closing the last connection folded the WAL into the file; a WAL left behind would be lost.
  if (std::filesystem::exists(building + "-wal", ec)) {
    return absl::UnavailableError(absl::StrCat("database ", building, ": its WAL was not folded into it"));
  }
  std::filesystem::rename(building, path, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("database ", path, ": cannot create it: ", ec.message()));
  GS_LOG(INFO) << "created database " << path;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SqliteJobStore>> SqliteJobStore::Open(const std::string& path) {
  std::error_code ec;
  const bool exists = std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found;
  absl::Status s = exists ? CheckFile(path) : CreateFresh(path);
  if (!s.ok()) return s;
  auto store = Connect(path, /*create=*/false);
  if (!store.ok()) return store.status();
  if (s = (*store)->Init(); !s.ok()) return s;
  return store;
}

absl::Status SqliteJobStore::Init() {
  // First, so that a database this coordinator must not touch is left as it was.
  absl::StatusOr<int64_t> found = CheckSchema();
  if (!found.ok()) return found.status();
  // WAL: readers never block the writer, and a commit is one append; NORMAL sync keeps every
  // committed transaction across a process crash (kill -9), which is the failure that matters
  // here, at a fraction of FULL's fsyncs.
  for (const char* pragma : {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=NORMAL;", "PRAGMA foreign_keys=ON;"}) {
    if (absl::Status s = Exec(pragma, pragma); !s.ok()) return s;
  }
  absl::Status s = Exec(
      "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE IF NOT EXISTS jobs ("
      "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
      "  id TEXT NOT NULL UNIQUE,"
      "  state INTEGER NOT NULL,"
      "  job BLOB NOT NULL,"
      "  running BLOB);"
      "CREATE TABLE IF NOT EXISTS quarantine ("
      "  seq INTEGER, id TEXT, state INTEGER, job BLOB, reason TEXT NOT NULL, time TEXT NOT NULL);",
      "creating the tables");
  if (!s.ok()) return s;
  if (*found == 1 && !(s = UpgradeFromVersion1()).ok()) return s;
  sqlite::Statement version(db_, "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?1);");
  sqlite3_bind_int64(version.get(), 1, kSchemaVersion);
  const int rc = version.ok() ? sqlite3_step(version.get()) : version.rc();
  if (rc != SQLITE_DONE) return Error(rc, "writing the schema version");
  return QuarantineBadRows();
}

absl::StatusOr<int64_t> SqliteJobStore::CheckSchema() {
  sqlite::Statement tables(db_, "SELECT count(*) FROM sqlite_master WHERE type = 'table';");
  int rc = tables.ok() ? sqlite3_step(tables.get()) : tables.rc();
  if (rc != SQLITE_ROW) return Error(rc, "reading the schema");
  if (sqlite3_column_int64(tables.get(), 0) == 0) return 0;  // new
  sqlite::Statement version(db_, "SELECT value FROM meta WHERE key = 'schema_version';");
  rc = version.ok() ? sqlite3_step(version.get()) : version.rc();
  if (rc != SQLITE_ROW) {
    return absl::DataLossError(absl::StrCat("database ", path_,
                                            " is a SQLite database, but not gradsync's: it "
                                            "records no schema version"));
  }
  const std::string text = sqlite::ColumnText(version.get(), 0);
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < 1) {
    return absl::DataLossError(
        absl::StrCat("database ", path_, ": schema version \"", Printable(text), "\" is not a version"));
  }
  if (v > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat("database ", path_, " has schema version ", v,
                                                      ", newer than this coordinator's (", kSchemaVersion,
                                                      "): run a coordinator that knows version ", v));
  }
  return v;
}

absl::Status SqliteJobStore::UpgradeFromVersion1() {
  const absl::Status s = InTransaction([&]() -> absl::Status {
    absl::Status added = Exec("ALTER TABLE jobs ADD COLUMN running BLOB;", "upgrading the schema to version 2");
    if (!added.ok()) return added;
    sqlite::Statement version(db_, "UPDATE meta SET value = ?1 WHERE key = 'schema_version';");
    sqlite3_bind_int64(version.get(), 1, kSchemaVersion);
    const int rc = version.ok() ? sqlite3_step(version.get()) : version.rc();
    return rc == SQLITE_DONE ? absl::OkStatus() : Error(rc, "upgrading the schema to version 2");
  });
  if (s.ok()) {
    GS_LOG(INFO) << "database " << path_ << ": schema version 1 upgraded to 2 (running generations are kept)";
  }
  return s;
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

#include "sqlite_job_store.h"

#include <sqlite3.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gradsync::coordinator {
namespace {

constexpr int kSchemaVersion = 1;

// A prepared statement that finalizes itself.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Stmt() { sqlite3_finalize(stmt_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

v1::Job ParseRow(sqlite3_stmt* stmt, int column) {
  v1::Job job;
  const void* blob = sqlite3_column_blob(stmt, column);
  job.ParseFromArray(blob, sqlite3_column_bytes(stmt, column));
  return job;
}

}  // namespace

SqliteJobStore::SqliteJobStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

SqliteJobStore::~SqliteJobStore() { sqlite3_close(db_); }

absl::Status SqliteJobStore::Error(const std::string& what) const {
  return absl::InternalError(absl::StrCat(path_, ": ", what, ": ", sqlite3_errmsg(db_)));
}

absl::Status SqliteJobStore::Exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return absl::InternalError(absl::StrCat(path_, ": ", msg));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SqliteJobStore>> SqliteJobStore::Open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return absl::InternalError(absl::StrCat("cannot open ", path, ": ", msg));
  }
  std::unique_ptr<SqliteJobStore> store(new SqliteJobStore(db, path));
  sqlite3_busy_timeout(db, 5000);
  // WAL: readers never block the writer, and a commit is one append; NORMAL sync keeps every
  // committed transaction across a process crash (kill -9), which is the failure that matters
  // here, at a fraction of FULL's fsyncs.
  for (const char* pragma : {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=NORMAL;", "PRAGMA foreign_keys=ON;"}) {
    if (absl::Status s = store->Exec(pragma); !s.ok()) {
      if (absl::StrContains(s.message(), "not a database")) {
        return absl::DataLossError(absl::StrCat(path, " is not a gradsync database (", s.message(), ")"));
      }
      return s;
    }
  }
  absl::Status s = store->Exec(
      "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE IF NOT EXISTS jobs ("
      "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
      "  id TEXT NOT NULL UNIQUE,"
      "  state INTEGER NOT NULL,"
      "  job BLOB NOT NULL);");
  if (!s.ok()) return s;
  Stmt version(db, "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?1);");
  sqlite3_bind_int(version.get(), 1, kSchemaVersion);
  if (!version.ok() || sqlite3_step(version.get()) != SQLITE_DONE) return store->Error("writing the schema version");
  return store;
}

absl::Status SqliteJobStore::Insert(const v1::Job& job) {
  Stmt stmt(db_, "INSERT INTO jobs(id, state, job) VALUES (?1, ?2, ?3);");
  if (!stmt.ok()) return Error("preparing insert");
  const std::string blob = job.SerializeAsString();
  sqlite3_bind_text(stmt.get(), 1, job.id().data(), static_cast<int>(job.id().size()), SQLITE_TRANSIENT);
  sqlite3_bind_int(stmt.get(), 2, job.state());
  sqlite3_bind_blob(stmt.get(), 3, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
  const int rc = sqlite3_step(stmt.get());
  if (rc == SQLITE_CONSTRAINT) return absl::AlreadyExistsError(absl::StrCat("job ", job.id(), " exists"));
  if (rc != SQLITE_DONE) return Error(absl::StrCat("inserting job ", job.id()));
  return absl::OkStatus();
}

absl::Status SqliteJobStore::Update(const v1::Job& job) {
  Stmt stmt(db_, "UPDATE jobs SET state = ?2, job = ?3 WHERE id = ?1;");
  if (!stmt.ok()) return Error("preparing update");
  const std::string blob = job.SerializeAsString();
  sqlite3_bind_text(stmt.get(), 1, job.id().data(), static_cast<int>(job.id().size()), SQLITE_TRANSIENT);
  sqlite3_bind_int(stmt.get(), 2, job.state());
  sqlite3_bind_blob(stmt.get(), 3, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
  if (sqlite3_step(stmt.get()) != SQLITE_DONE) return Error(absl::StrCat("updating job ", job.id()));
  if (sqlite3_changes(db_) == 0) return absl::NotFoundError(absl::StrCat("job ", job.id(), " not found"));
  return absl::OkStatus();
}

std::optional<v1::Job> SqliteJobStore::Get(const std::string& id) const {
  Stmt stmt(db_, "SELECT job FROM jobs WHERE id = ?1;");
  if (!stmt.ok()) return std::nullopt;
  sqlite3_bind_text(stmt.get(), 1, id.data(), static_cast<int>(id.size()), SQLITE_TRANSIENT);
  if (sqlite3_step(stmt.get()) != SQLITE_ROW) return std::nullopt;
  return ParseRow(stmt.get(), 0);
}

std::vector<v1::Job> SqliteJobStore::List(const std::string& after_id, int limit) const {
  Stmt stmt(db_,
            "SELECT job FROM jobs WHERE seq > COALESCE((SELECT seq FROM jobs WHERE id = ?1), 0) "
            "ORDER BY seq LIMIT ?2;");
  std::vector<v1::Job> out;
  if (!stmt.ok()) return out;
  sqlite3_bind_text(stmt.get(), 1, after_id.data(), static_cast<int>(after_id.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int(stmt.get(), 2, limit);
  while (sqlite3_step(stmt.get()) == SQLITE_ROW) out.push_back(ParseRow(stmt.get(), 0));
  return out;
}

}  // namespace gradsync::coordinator

#include "gradsync/core/sqlite_database.h"

#include <filesystem>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gradsync/core/log.h"
#include "gradsync/core/sqlite.h"

namespace gradsync::sqlite {
namespace {

constexpr const char* kSidecars[] = {"", "-wal", "-shm", "-journal"};

bool Exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found;
}

}  // namespace

Database::Database(sqlite3* db, std::string path, Schema schema)
    : db_(db), path_(std::move(path)), schema_(std::move(schema)) {}

Database::~Database() { sqlite3_close(db_); }

absl::Status Database::Error(int rc, const std::string& doing) const {
  return absl::Status(StatusCodeOf(rc), absl::StrCat(schema_.what, " ", path_, ": ", doing, ": ", sqlite3_errmsg(db_)));
}

absl::Status Database::Exec(const char* sql, const std::string& doing) {
  if (const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); rc != SQLITE_OK) return Error(rc, doing);
  return absl::OkStatus();
}

absl::Status Database::InTransaction(const std::function<absl::Status()>& body) {
  if (absl::Status s = Exec("BEGIN IMMEDIATE;", "starting a transaction"); !s.ok()) return s;
  absl::Status s = body();
  if (s.ok()) s = Exec("COMMIT;", "committing");
  // After an I/O error SQLite may have rolled back already; then this finds no transaction.
  if (!s.ok()) sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
  return s;
}

absl::StatusOr<std::unique_ptr<Database>> Database::Connect(const std::string& path, bool create,
                                                            const Schema& schema) {
  absl::StatusOr<sqlite3*> db = sqlite::Open(path, create, schema.what);
  if (!db.ok()) return db.status();
  return std::unique_ptr<Database>(new Database(*db, path, schema));
}

absl::Status Database::CreateFresh(const std::string& path, const Schema& schema) {
  const std::string building = path + ".new";
  std::error_code ec;
  // Left by a process that crashed while building it.
  for (const char* suffix : kSidecars) std::filesystem::remove(building + suffix, ec);
  {
    absl::StatusOr<std::unique_ptr<Database>> db = Connect(building, /*create=*/true, schema);
    if (!db.ok()) return db.status();
    if (absl::Status s = (*db)->Init(); !s.ok()) return s;
  }
  // Closing the last connection folded the WAL into the file; a WAL left behind would be lost.
  if (Exists(building + "-wal")) {
    return absl::UnavailableError(absl::StrCat(schema.what, " ", building, ": its WAL was not folded into it"));
  }
  std::filesystem::rename(building, path, ec);
  if (ec) return absl::UnavailableError(absl::StrCat(schema.what, " ", path, ": cannot create it: ", ec.message()));
  GS_LOG(INFO) << "created " << schema.what << " " << path;
  return absl::OkStatus();
}

absl::Status Database::CheckFile(const std::string& path, const Schema& schema) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) == 0 && !ec) {
    return absl::DataLossError(absl::StrCat(schema.what, " ", path, " is empty (0 bytes), not a gradsync ",
                                            schema.what, "; move it away to start afresh"));
  }
  return CheckHeader(path, schema.what);
}

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path, Schema schema) {
  absl::Status s = Exists(path) ? CheckFile(path, schema) : CreateFresh(path, schema);
  if (!s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Database>> db = Connect(path, /*create=*/false, schema);
  if (!db.ok()) return db.status();
  if (schema.quick_check && !(s = (*db)->QuickCheck()).ok()) return s;
  if (s = (*db)->Init(); !s.ok()) return s;
  return db;
}

absl::Status Database::QuickCheck() const {
  Statement check(db_, "PRAGMA quick_check;");
  const int rc = check.ok() ? sqlite3_step(check.get()) : check.rc();
  if (rc != SQLITE_ROW) return Error(rc, "checking it");
  if (const std::string verdict = ColumnText(check.get(), 0); verdict != "ok") {
    return absl::DataLossError(absl::StrCat(schema_.what, " ", path_, " is corrupt: ",
                                            absl::StrReplaceAll(verdict.substr(0, 300), {{"\n", "; "}})));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Database::FoundVersion() const {
  Statement tables(db_, "SELECT count(*) FROM sqlite_master WHERE type = 'table';");
  int rc = tables.ok() ? sqlite3_step(tables.get()) : tables.rc();
  if (rc != SQLITE_ROW) return Error(rc, "reading the schema");
  if (sqlite3_column_int64(tables.get(), 0) == 0) return 0;  // new
  Statement version(db_, "SELECT value FROM meta WHERE key = ?1;");
  version.Text(1, schema_.version_key);
  rc = version.ok() ? sqlite3_step(version.get()) : version.rc();
  const std::string text = rc == SQLITE_ROW ? ColumnText(version.get(), 0) : "";
  int64_t v = 0;
  if (rc != SQLITE_ROW || !absl::SimpleAtoi(text, &v) || v < 1) {
    return absl::DataLossError(absl::StrCat(
        schema_.what, " ", path_, " is a SQLite database, but not a gradsync ", schema_.what, ": it records ",
        rc == SQLITE_ROW ? absl::StrCat("\"", absl::CHexEscape(text.substr(0, 64)), "\" as") : "no", " schema version"));
  }
  if (v > schema_.version) {
    return absl::FailedPreconditionError(absl::StrCat(schema_.what, " ", path_, " has schema version ", v,
                                                      ", newer than this ", schema_.program, "'s (", schema_.version,
                                                      "): run a ", schema_.program, " that knows version ", v));
  }
  return v;
}

absl::Status Database::Init() {
  // First, so that a database this program must not touch is left as it was.
  absl::StatusOr<int64_t> found = FoundVersion();
  if (!found.ok()) return found.status();
  for (const char* pragma : {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=NORMAL;"}) {
    if (absl::Status s = Exec(pragma, pragma); !s.ok()) return s;
  }
  for (const std::string& pragma : schema_.pragmas) {
    if (absl::Status s = Exec(pragma.c_str(), pragma); !s.ok()) return s;
  }
  const std::string tables =
      absl::StrCat("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);", schema_.tables);
  if (absl::Status s = Exec(tables.c_str(), "creating the tables"); !s.ok()) return s;
  if (*found >= 1 && *found < schema_.version) return Upgrade(*found);
  Statement version(db_, "INSERT OR IGNORE INTO meta(key, value) VALUES (?1, ?2);");
  version.Text(1, schema_.version_key);
  version.Int(2, schema_.version);
  const int rc = version.ok() ? version.Run() : version.rc();
  return rc == SQLITE_DONE ? absl::OkStatus() : Error(rc, "writing the schema version");
}

absl::Status Database::Upgrade(int64_t found) {
  const std::string doing = absl::StrCat("upgrading the schema from version ", found, " to ", schema_.version);
  if (!schema_.upgrade) return absl::InternalError(absl::StrCat(schema_.what, " ", path_, ": ", doing, ": no upgrade"));
  const absl::Status s = InTransaction([&]() -> absl::Status {
    if (absl::Status up = schema_.upgrade(*this, found); !up.ok()) return up;
    Statement version(db_, "UPDATE meta SET value = ?2 WHERE key = ?1;");
    version.Text(1, schema_.version_key);
    version.Int(2, schema_.version);
    const int rc = version.ok() ? version.Run() : version.rc();
    return rc == SQLITE_DONE ? absl::OkStatus() : Error(rc, doing);
  });
  if (s.ok()) {
    GS_LOG(INFO) << schema_.what << " " << path_ << ": schema version " << found << " upgraded to " << schema_.version;
  }
  return s;
}

absl::StatusOr<std::string> SetAside(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string aside = absl::StrCat(path, ".bad-", absl::FormatTime("%Y%m%dT%H%M%SZ", absl::Now(), absl::UTCTimeZone()));
  for (int n = 2; fs::symlink_status(aside, ec).type() != fs::file_type::not_found; ++n) {
    aside = absl::StrCat(aside.substr(0, aside.find_last_of('Z') + 1), "-", n);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::string from = path + suffix;
    if (fs::symlink_status(from, ec).type() == fs::file_type::not_found) continue;
    fs::rename(from, aside + suffix, ec);
    if (ec) return absl::UnavailableError(absl::StrCat("cannot move ", from, " to ", aside, suffix, ": ", ec.message()));
  }
  return aside;
}

}  // namespace gradsync::sqlite

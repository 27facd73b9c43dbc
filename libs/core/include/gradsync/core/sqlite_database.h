// The lifecycle of a SQLite file with a versioned schema, one for every store (the coordinator's
// jobs, the metrics service's series): creating it whole or not at all, refusing a file that is not
// the store's or is newer than this program, upgrading an older one, and the journal settings.
//
// Open(path, schema):
//   missing file   built under `<path>.new` (tables and version written, the WAL folded in) and
//                  renamed into place, so a crash never leaves a half-made database at `path`
//   existing file  must be a SQLite database (sqlite::CheckHeader; an empty file, which SQLite would
//                  take for a new one, is refused: its data would silently be gone); with
//                  `quick_check`, SQLite's quick_check must find it sound (DATA_LOSS otherwise)
//   its version    read from the `meta` table before anything is written, so a file this program
//                  must not touch is left as it was: none recorded is DATA_LOSS ("not a gradsync
//                  <what>"), a newer one FAILED_PRECONDITION; an older one goes through `upgrade`
//   then           journal_mode WAL (readers never block the writer, a commit is one append) and
//                  synchronous NORMAL (every committed transaction survives a process crash, at a
//                  fraction of FULL's fsyncs), the schema's own pragmas, its tables.
// Every message names "<what> <path>".
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync::sqlite {

class Database;

struct Schema {
  std::string what;         // names the file in messages: "database", "series database"
  std::string program;      // who knows the version, in messages: "coordinator", "metrics service"
  std::string version_key;  // the meta row that holds the schema version
  int64_t version = 1;      // this program's
  // CREATE ... IF NOT EXISTS statements for every table but `meta`, which the lifecycle owns.
  std::string tables;
  std::vector<std::string> pragmas;  // run after WAL and NORMAL
  bool quick_check = false;
  // Brings a database of version `found` (1 <= found < version) to `version`, inside a
  // transaction; the lifecycle then records the version. Null: no older version exists.
  std::function<absl::Status(Database& db, int64_t found)> upgrade;
};

class Database {
 public:
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path, Schema schema);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }
  const Schema& schema() const { return schema_; }

  // SQLite's result `rc` as a status (StatusCodeOf): "<what> <path>: <doing>: <SQLite's message>".
  absl::Status Error(int rc, const std::string& doing) const;
  // Runs statements that return no rows.
  absl::Status Exec(const char* sql, const std::string& doing);
  // BEGIN IMMEDIATE, `body`, COMMIT; rolled back when either fails.
  absl::Status InTransaction(const std::function<absl::Status()>& body);

 private:
  Database(sqlite3* db, std::string path, Schema schema);
  // Connects to `path`, which must exist unless `create`.
  static absl::StatusOr<std::unique_ptr<Database>> Connect(const std::string& path, bool create, const Schema& schema);
  static absl::Status CreateFresh(const std::string& path, const Schema& schema);
  static absl::Status CheckFile(const std::string& path, const Schema& schema);
  absl::Status QuickCheck() const;
  // The version recorded, 0 for a database with no tables yet.
  absl::StatusOr<int64_t> FoundVersion() const;
  absl::Status Init();
  absl::Status Upgrade(int64_t found);

  sqlite3* db_;
  std::string path_;
  Schema schema_;
};

// Moves the database at `path` (with its -wal and -shm files) aside to `<path>.bad-<UTC time>`,
// never over an earlier one, for a store that starts empty rather than not at all when its file
// cannot be used; returns where it went. UNAVAILABLE naming both paths when a file cannot be moved.
absl::StatusOr<std::string> SetAside(const std::string& path);

}  // namespace gradsync::sqlite

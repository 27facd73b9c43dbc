// What the project's SQLite stores share (the coordinator's job store, the metrics service's
// series store): opening a database file, a prepared statement that finalizes itself, SQLite's
// result codes as statuses, and the check that an existing file is a SQLite database at all.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync::sqlite {

// DATA_LOSS for a corrupt file or one that is no database, UNAVAILABLE for what may pass (I/O,
// a full disk, a lock, permissions), INTERNAL otherwise. Extended codes count as their primary.
absl::StatusCode StatusCodeOf(int rc);

// Opens `path` read-write (creating it when `create`), serialised across threads, with a 5 s busy
// timeout. The error names "<what> <path>".
absl::StatusOr<sqlite3*> Open(const std::string& path, bool create, const std::string& what);

// OK when `path` is a regular file that starts as a SQLite database does (SQLite itself takes an
// empty file for a new database and says little about other files). FAILED_PRECONDITION for no
// regular file, UNAVAILABLE when it cannot be read, DATA_LOSS otherwise; "<what> <path>" named.
absl::Status CheckHeader(const std::string& path, const std::string& what);

// A column's text ("" for NULL).
std::string ColumnText(sqlite3_stmt* stmt, int column);

// A prepared statement that finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool ok() const { return rc_ == SQLITE_OK; }
  int rc() const { return rc_; }
  sqlite3_stmt* get() { return stmt_; }
  void Text(int i, const std::string& text) {
    sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void Blob(int i, const std::string& bytes) {
    sqlite3_bind_blob(stmt_, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  }
  void Int(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  // Runs a statement that returns no row, ready to run again with new bindings.
  int Run() {
    const int rc = sqlite3_step(stmt_);
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    return rc == SQLITE_ROW ? SQLITE_DONE : rc;
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

}  // namespace gradsync::sqlite

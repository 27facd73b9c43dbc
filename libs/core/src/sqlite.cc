#include "gradsync/core/sqlite.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace gradsync::sqlite {
namespace {

constexpr char kSqliteMagic[] = "SQLite format 3";  // with its terminating NUL, the file's first 16 bytes

}  // namespace

absl::StatusCode StatusCodeOf(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return absl::StatusCode::kDataLoss;
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_NOMEM:
    case SQLITE_PERM:
    case SQLITE_AUTH:
    case SQLITE_PROTOCOL: return absl::StatusCode::kUnavailable;
    default: return absl::StatusCode::kInternal;
  }
}

absl::StatusOr<sqlite3*> Open(const std::string& path, bool create, const std::string& what) {
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  if (const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr); rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return absl::Status(StatusCodeOf(rc), absl::StrCat(what, " ", path, ": cannot open it: ", msg));
  }
  sqlite3_busy_timeout(db, 5000);
  return db;
}

absl::Status CheckHeader(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(what, " ", path, " is not a regular file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) return absl::UnavailableError(absl::StrCat(what, " ", path, ": cannot read it"));
  char header[sizeof(kSqliteMagic)] = {};
  in.read(header, sizeof(header));
  if (in.gcount() != static_cast<std::streamsize>(sizeof(header)) ||
      std::memcmp(header, kSqliteMagic, sizeof(header)) != 0) {
    return absl::DataLossError(absl::StrCat(what, " ", path, " is not a SQLite database"));
  }
  return absl::OkStatus();
}

std::string ColumnText(sqlite3_stmt* stmt, int column) {
  const unsigned char* text = sqlite3_column_text(stmt, column);
  return text == nullptr ? "" : std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt, column));
}

}  // namespace gradsync::sqlite

// Jobs kept in SQLite (WAL journal), so a coordinator that restarts, even after kill -9, has every
// job back. Each job is one row holding its serialized Job message, keyed by id, ordered by
// creation, beside the record of its running generation (jobs.running) for a coordinator started
// later to adopt. The database records its schema version (meta.schema_version, 2); a coordinator
// upgrades a version 1 database in place and refuses a newer one. A row that is not the job it names
// is moved to the quarantine table, never loaded.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "job_store.h"

struct sqlite3;

namespace gradsync::coordinator {

class SqliteJobStore : public JobStore {
 public:
  // Opens `path`, or creates it when there is no such file (parent directories must exist). A new
  // database is built under a temporary name and renamed into place, so a crash never leaves an
  // empty file behind. Every error names the file:
  //   DATA_LOSS: an empty (0-byte) file, a file that is not SQLite, a SQLite database that is not
  //     gradsync's, or a jobs table SQLite cannot read;
  //   FAILED_PRECONDITION: a schema version newer than this coordinator's (both are named);
  //     a version 1 database is upgraded to 2 (a column added) before anything else is written;
  //   UNAVAILABLE / INTERNAL: the file cannot be opened or written.
  // A row whose job does not parse, or holds another id than the row's, is moved to the
  // quarantine table with the reason, and logged.
  static absl::StatusOr<std::unique_ptr<SqliteJobStore>> Open(const std::string& path);
  ~SqliteJobStore() override;

  absl::Status Insert(const v1::Job& job) override;
  // Clears the job's running generation record.
  absl::Status Update(const v1::Job& job) override;
  absl::Status UpdateWithGeneration(const v1::Job& job, const v1::GenerationRecord& running) override;
  absl::StatusOr<std::map<std::string, v1::GenerationRecord>> ListGenerations() const override;
  std::optional<v1::Job> Get(const std::string& id) const override;
  absl::StatusOr<std::vector<v1::Job>> List(const std::string& after_id, int limit) const override;
  // Inserts and deletes a row of `bytes` in one transaction: it commits only if the database can
  // grow by that much, and the pages it frees stay in the file for the next write.
  absl::Status Probe(size_t bytes) override;

 private:
  SqliteJobStore(sqlite3* db, std::string path);
  // Connects to `path`, which must exist unless `create`.
  static absl::StatusOr<std::unique_ptr<SqliteJobStore>> Connect(const std::string& path, bool create);
  // Builds a new database at `path` under a temporary name, then renames it into place.
  static absl::Status CreateFresh(const std::string& path);

  // Journal settings, the schema check, the tables and the quarantine of bad rows.
  absl::Status Init();
  // The schema version found (0 for a new database); FAILED_PRECONDITION for a newer schema,
  // DATA_LOSS for a database that is not gradsync's.
  absl::StatusOr<int64_t> CheckSchema();
  // Version 1 to 2: the running column, in one transaction with the version.
  absl::Status UpgradeFromVersion1();
  absl::Status QuarantineBadRows();
  absl::Status Quarantine(int64_t seq, const std::string& reason);

  absl::Status Exec(const char* sql, const std::string& what);
  // Runs `body` in a write transaction, committed when it succeeds and rolled back otherwise.
  absl::Status InTransaction(const std::function<absl::Status()>& body);
  // The status of SQLite result `rc` while doing `what`, naming the database.
  absl::Status Error(int rc, const std::string& what) const;

  sqlite3* db_;
  std::string path_;
};

}  // namespace gradsync::coordinator

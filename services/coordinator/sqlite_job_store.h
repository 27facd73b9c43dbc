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
#include "gradsync/core/sqlite_database.h"
#include "job_store.h"

namespace gradsync::coordinator {

class SqliteJobStore : public JobStore {
 public:
  // Opens `path`, or creates it when there is no such file (parent directories must exist), as
  // sqlite::Database::Open does (gradsync/core/sqlite_database.h). Every error names the file:
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
  explicit SqliteJobStore(std::unique_ptr<sqlite::Database> database);

  absl::Status QuarantineBadRows();
  absl::Status Quarantine(int64_t seq, const std::string& reason);

  // The database's (gradsync/core/sqlite_database.h).
  absl::Status Exec(const char* sql, const std::string& what);
  absl::Status InTransaction(const std::function<absl::Status()>& body);
  absl::Status Error(int rc, const std::string& what) const;

  std::unique_ptr<sqlite::Database> database_;
  sqlite3* const db_;
  const std::string path_;
};

}  // namespace gradsync::coordinator

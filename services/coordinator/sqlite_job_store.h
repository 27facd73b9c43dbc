// Jobs kept in SQLite (WAL journal), so a coordinator that restarts, even after kill -9, has every
// job back. Each job is one row holding its serialized Job message, keyed by id, ordered by
// creation.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "job_store.h"

struct sqlite3;

namespace gradsync::coordinator {

class SqliteJobStore : public JobStore {
 public:
  // Opens or creates `path` (parent directories must exist). INTERNAL naming the path on failure;
  // DATA_LOSS if the file is not a gradsync database.
  static absl::StatusOr<std::unique_ptr<SqliteJobStore>> Open(const std::string& path);
  ~SqliteJobStore() override;

  absl::Status Insert(const v1::Job& job) override;
  absl::Status Update(const v1::Job& job) override;
  std::optional<v1::Job> Get(const std::string& id) const override;
  std::vector<v1::Job> List(const std::string& after_id, int limit) const override;

 private:
  SqliteJobStore(sqlite3* db, std::string path);
  absl::Status Exec(const char* sql) const;
  absl::Status Error(const std::string& what) const;

  sqlite3* db_;
  std::string path_;
};

}  // namespace gradsync::coordinator

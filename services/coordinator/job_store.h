// Where the coordinator keeps job resources. Two stores implement it: SqliteJobStore
// (sqlite_job_store.h), the durable one a coordinator with --state_dir uses, and the in-memory
// store below, for a coordinator without a state directory (jobs lost when it stops) and tests.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/v1/coordinator.pb.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::coordinator {

// Not thread-safe: the coordinator's JobWriter (job_writer.h) serialises access under its lock.
// A write that fails leaves the store as it was. Errors name the database: UNAVAILABLE when the
// disk cannot take the write now (full, an I/O error, locked), DATA_LOSS when the file is corrupt.
class JobStore {
 public:
  virtual ~JobStore() = default;

  // ALREADY_EXISTS if a job with this id exists.
  virtual absl::Status Insert(const gradsync::v1::Job& job) = 0;
  // NOT_FOUND if the job does not exist.
  virtual absl::Status Update(const gradsync::v1::Job& job) = 0;
  // Update, together with the record of the job's running generation (no ranks when none runs), in
  // one write: what a coordinator started later needs to adopt the generation. A store whose jobs
  // never outlive their coordinator (the in-memory one) keeps this default, which drops the record.
  virtual absl::Status UpdateWithGeneration(const gradsync::v1::Job& job,
                                            const gradsync::v1::GenerationRecord& running) {
    return Update(job);
  }
  // The records UpdateWithGeneration kept, by job id; jobs with no running generation have none. A
  // record that cannot be read is left out (logged): its job restarts instead of being adopted.
  virtual absl::StatusOr<std::map<std::string, gradsync::v1::GenerationRecord>> ListGenerations() const {
    return std::map<std::string, gradsync::v1::GenerationRecord>();
  }
  // nullopt when the job is not stored (or its row cannot be read, which is logged).
  virtual std::optional<gradsync::v1::Job> Get(const std::string& id) const = 0;
  // Jobs in creation order, starting after `after_id` (empty: from the first); the store's error
  // when it cannot be read.
  virtual absl::StatusOr<std::vector<gradsync::v1::Job>> List(const std::string& after_id, int limit) const = 0;
  // Whether a write of `bytes` would be stored now: a write that leaves no trace. For the
  // JobWriter's health probe, while nothing else is left to write. A store that cannot fail
  // keeps this default.
  virtual absl::Status Probe(size_t bytes) { return absl::OkStatus(); }
};

class InMemoryJobStore : public JobStore {
 public:
  absl::Status Insert(const gradsync::v1::Job& job) override;
  absl::Status Update(const gradsync::v1::Job& job) override;
  std::optional<gradsync::v1::Job> Get(const std::string& id) const override;
  absl::StatusOr<std::vector<gradsync::v1::Job>> List(const std::string& after_id, int limit) const override;

 private:
  std::map<std::string, gradsync::v1::Job> jobs_;
  std::vector<std::string> order_;
};

}  // namespace gradsync::coordinator

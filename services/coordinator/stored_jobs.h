// The jobs as the store holds them, which is what the job API shows: each job at the last version
// written, so no client ever reads a state that a restart would lose. Also whether the store takes
// writes (its health). The JobWriter puts each job here once its write succeeded; readers never
// wait for a database write. Thread-safe; its lock is never held across I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::coordinator {

class StoredJobs {
 public:
  // Records `job` as stored at `version`, unless a newer version of it is; a new job goes last in
  // creation order. Wakes the job's watchers.
  void Put(const v1::Job& job, int64_t version);
  // The job and its version; nullopt if it is not stored.
  std::optional<std::pair<v1::Job, int64_t>> Get(const std::string& id) const;
  // Up to `page_size` jobs in creation order after the job `page_token` names (empty: the first),
  // with the next token when more follow. INVALID_ARGUMENT for an unknown token.
  absl::StatusOr<v1::ListJobsResponse> List(int page_size, const std::string& page_token) const;
  // Waits up to `timeout` for the job's stored version to pass `seen`; returns the job and its
  // version. NOT_FOUND for an unknown job, UNAVAILABLE once shut down.
  absl::StatusOr<std::pair<v1::Job, int64_t>> WaitChange(const std::string& id, int64_t seen, absl::Duration timeout);
  // Releases every watcher; later waits fail at once.
  void Shutdown();

  // OK while the store takes writes; the error of the write that failed otherwise.
  absl::Status health() const;
  // Records the store's health and tells the listener when it changes.
  void SetHealth(absl::Status health);
  // Calls `listener` with the health now and then at every change, under this object's lock: it
  // must not call back into the coordinator. nullptr stops the calls.
  void OnHealthChange(std::function<void(const absl::Status&)> listener);

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::pair<v1::Job, int64_t>> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> order_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status health_ ABSL_GUARDED_BY(mu_);
  std::function<void(const absl::Status&)> listener_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync::coordinator

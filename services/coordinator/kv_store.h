// The coordinator's rendezvous key-value store. Keys live in namespaces (one per job
// generation) so a new generation never sees the keys of an aborted one. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gradsync::coordinator {

class KvStore {
 public:
  void Set(const std::string& ns, const std::string& key, std::string value);

  // Waits up to `timeout` for the key. DEADLINE_EXCEEDED names the key; CANCELLED if the
  // namespace is dropped or the store shuts down meanwhile.
  absl::StatusOr<std::string> Get(const std::string& ns, const std::string& key, absl::Duration timeout);

  // Waits until every key exists. DEADLINE_EXCEEDED names the keys still missing.
  absl::Status Wait(const std::string& ns, const std::vector<std::string>& keys, absl::Duration timeout);

  // Adds `delta` to the decimal integer at `key` (0 if absent). FAILED_PRECONDITION if the
  // value there is not an integer.
  absl::StatusOr<int64_t> Add(const std::string& ns, const std::string& key, int64_t delta);

  // Forgets a namespace (when its generation ends); waiters in it are released.
  void DropNamespace(const std::string& ns);

  // Releases every waiter with CANCELLED; later waits fail at once.
  void Shutdown();

  size_t NamespaceSizeForTest(const std::string& ns);

 private:
  bool Has(const std::string& ns, const std::string& key) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status WaitLocked(const std::string& ns, const std::vector<std::string>& keys, absl::Duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::map<std::string, std::map<std::string, std::string>> data_ ABSL_GUARDED_BY(mu_);
  // Bumped whenever a namespace is dropped, so waiters notice.
  std::map<std::string, int64_t> epochs_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

// The namespace of a job generation.
std::string KvNamespaceOf(const std::string& job_id, int generation);

}  // namespace gradsync::coordinator

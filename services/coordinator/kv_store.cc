#include "kv_store.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gradsync::coordinator {

std::string KvNamespaceOf(const std::string& job_id, int generation) { return absl::StrCat(job_id, "/", generation); }

void KvStore::Set(const std::string& ns, const std::string& key, std::string value) {
  absl::MutexLock lock(&mu_);
  data_[ns][key] = std::move(value);
}

bool KvStore::Has(const std::string& ns, const std::string& key) const {
  auto it = data_.find(ns);
  return it != data_.end() && it->second.count(key) > 0;
}

absl::Status KvStore::WaitLocked(const std::string& ns, const std::vector<std::string>& keys, absl::Duration timeout) {
  const int64_t epoch = epochs_[ns];
  auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    if (shutdown_ || epochs_[ns] != epoch) return true;
    for (const auto& k : keys) {
      if (!Has(ns, k)) return false;
    }
    return true;
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  if (shutdown_) return absl::CancelledError("key-value store is shutting down");
  if (epochs_[ns] != epoch) return absl::CancelledError(absl::StrCat("namespace ", ns, " ended"));
  std::vector<std::string> missing;
  for (const auto& k : keys) {
    if (!Has(ns, k)) missing.push_back(k);
  }
  if (!missing.empty()) {
    return absl::DeadlineExceededError(absl::StrCat("keys not set within ", absl::FormatDuration(timeout), " in ", ns,
                                                    ": ", absl::StrJoin(missing, ", ")));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> KvStore::Get(const std::string& ns, const std::string& key, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  absl::Status s = WaitLocked(ns, {key}, timeout);
  if (!s.ok()) return s;
  return data_[ns][key];
}

absl::Status KvStore::Wait(const std::string& ns, const std::vector<std::string>& keys, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  return WaitLocked(ns, keys, timeout);
}

absl::StatusOr<int64_t> KvStore::Add(const std::string& ns, const std::string& key, int64_t delta) {
  absl::MutexLock lock(&mu_);
  std::string& slot = data_[ns][key];
  int64_t value = 0;
  if (!slot.empty() && !absl::SimpleAtoi(slot, &value)) {
    return absl::FailedPreconditionError(absl::StrCat("key ", key, " in ", ns, " holds a non-integer"));
  }
  value += delta;
  slot = absl::StrCat(value);
  return value;
}

void KvStore::DropNamespace(const std::string& ns) {
  absl::MutexLock lock(&mu_);
  data_.erase(ns);
  ++epochs_[ns];
}

void KvStore::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
}

size_t KvStore::NamespaceSizeForTest(const std::string& ns) {
  absl::MutexLock lock(&mu_);
  auto it = data_.find(ns);
  return it == data_.end() ? 0 : it->second.size();
}

}  // namespace gradsync::coordinator

#include "stored_jobs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gradsync::coordinator {

void StoredJobs::Put(const v1::Job& job, int64_t version) {
  absl::MutexLock lock(&mu_);
  auto [it, added] = jobs_.try_emplace(job.id(), job, version);
  if (added) {
    order_.push_back(job.id());
  } else if (it->second.second < version) {
    it->second = {job, version};
  }
}

std::optional<std::pair<v1::Job, int64_t>> StoredJobs::Get(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<v1::ListJobsResponse> StoredJobs::List(int page_size, const std::string& page_token) const {
  absl::MutexLock lock(&mu_);
  auto it = order_.begin();
  if (!page_token.empty()) {
    it = std::find(order_.begin(), order_.end(), page_token);
    if (it == order_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("pageToken: unknown token \"", page_token, "\""));
    }
    ++it;
  }
  v1::ListJobsResponse resp;
  for (; it != order_.end() && resp.jobs_size() < page_size; ++it) *resp.add_jobs() = jobs_.at(*it).first;
  if (it != order_.end()) resp.set_next_page_token(resp.jobs().rbegin()->id());
  return resp;
}

absl::StatusOr<std::pair<v1::Job, int64_t>> StoredJobs::WaitChange(const std::string& id, int64_t seen,
                                                                   absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  // Jobs are never removed, so `it` stays valid while the lock is released.
  auto changed = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return shutdown_ || it->second.second > seen; };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  if (shutdown_) return absl::UnavailableError("coordinator is shutting down");
  return it->second;
}

void StoredJobs::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
}

absl::Status StoredJobs::health() const {
  absl::MutexLock lock(&mu_);
  return health_;
}

void StoredJobs::SetHealth(absl::Status health) {
  absl::MutexLock lock(&mu_);
  if (health.ok() == health_.ok()) {
    health_ = std::move(health);
    return;
  }
  health_ = std::move(health);
  if (listener_) listener_(health_);
}

void StoredJobs::OnHealthChange(std::function<void(const absl::Status&)> listener) {
  absl::MutexLock lock(&mu_);
  listener_ = std::move(listener);
  if (listener_) listener_(health_);
}

}  // namespace gradsync::coordinator

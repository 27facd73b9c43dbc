#include "job_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gradsync::coordinator {

absl::Status InMemoryJobStore::Insert(const v1::Job& job) {
  if (jobs_.count(job.id()) > 0) return absl::AlreadyExistsError(absl::StrCat("job ", job.id(), " exists"));
  jobs_[job.id()] = job;
  order_.push_back(job.id());
  return absl::OkStatus();
}

absl::Status InMemoryJobStore::Update(const v1::Job& job) {
  auto it = jobs_.find(job.id());
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", job.id(), " not found"));
  it->second = job;
  return absl::OkStatus();
}

std::optional<v1::Job> InMemoryJobStore::Get(const std::string& id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<std::vector<v1::Job>> InMemoryJobStore::List(const std::string& after_id, int limit) const {
  auto it = order_.begin();
  if (!after_id.empty()) {
    it = std::find(order_.begin(), order_.end(), after_id);
    if (it != order_.end()) ++it;
  }
  std::vector<v1::Job> out;
  for (; it != order_.end() && static_cast<int>(out.size()) < limit; ++it) out.push_back(jobs_.at(*it));
  return out;
}

}  // namespace gradsync::coordinator

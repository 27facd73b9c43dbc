#include "connection_limits.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace gradsync::http {

Admission::Admission(Admission&& other) noexcept
    : limits_(std::exchange(other.limits_, nullptr)), client_(std::move(other.client_)) {}

Admission& Admission::operator=(Admission&& other) noexcept {
  if (this != &other) {
    if (limits_ != nullptr) limits_->Release(client_);
    limits_ = std::exchange(other.limits_, nullptr);
    client_ = std::move(other.client_);
  }
  return *this;
}

Admission::~Admission() {
  if (limits_ != nullptr) limits_->Release(client_);
}

absl::StatusOr<Admission> ConnectionLimits::Admit(const std::string& client) {
  absl::MutexLock lock(&mu_);
  if (total_ >= max_total_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the server holds its maximum of ", max_total_, " open connections; retry later"));
  }
  int& mine = per_client_[client];
  if (mine >= max_per_client_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this client address already holds the maximum of ", max_per_client_, " open connections"));
  }
  ++mine;
  ++total_;
  return Admission(this, client);
}

void ConnectionLimits::Release(const std::string& client) {
  absl::MutexLock lock(&mu_);
  --total_;
  auto it = per_client_.find(client);
  if (--it->second == 0) per_client_.erase(it);
}

}  // namespace gradsync::http

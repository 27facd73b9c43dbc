#include "worker_pool.h"

#include <openssl/sha.h>

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "auth.h"
#include "gradsync/core/random_token.h"

namespace gradsync::coordinator {

std::string SessionDigest(absl::string_view session) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(session.data()), session.size(), digest);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

WorkerLease::WorkerLease(std::string id, v1::RegisterWorkerRequest info, absl::Time now)
    : id_(std::move(id)),
      session_(id_ + "." + NewRandomToken()),
      session_digest_(SessionDigest(session_)),
      info_(std::move(info)),
      registered_at_(now),
      last_seen_(now) {}

bool WorkerLease::SessionMatches(absl::string_view presented) const {
  return ConstantTimeEquals(std::string(presented), session_);
}

absl::string_view WorkerLease::WorkerIdOfSession(absl::string_view session) {
  const size_t dot = session.rfind('.');
  return dot == absl::string_view::npos ? absl::string_view() : session.substr(0, dot);
}

void WorkerLease::Assign(v1::Assignment a) {
  assigned_ = true;
  job_id_ = a.job_id();
  generation_ = a.generation();
  rank_ = a.rank();
  abort_reason_.clear();
  inbox_.push_back(std::move(a));
}

void WorkerLease::Adopt(const std::string& job_id, int generation, int rank) {
  assigned_ = true;
  job_id_ = job_id;
  generation_ = generation;
  rank_ = rank;
  abort_reason_.clear();
  inbox_.clear();
}

void WorkerLease::LeaveGeneration(const std::string& job_id, int generation, const std::string& reason) {
  if (job_id_ != job_id || generation_ != generation) return;
  const bool never_started = !inbox_.empty() && inbox_.back().job_id() == job_id;
  if (never_started) {
    Free();
  } else {
    abort_reason_ = reason;
  }
}

void WorkerLease::Free() {
  assigned_ = false;
  job_id_.clear();
  generation_ = 0;
  rank_ = -1;
  inbox_.clear();
  abort_reason_.clear();
}

std::optional<v1::Assignment> WorkerLease::TakeAssignment() {
  if (inbox_.empty()) return std::nullopt;
  v1::Assignment a = std::move(inbox_.front());
  inbox_.pop_front();
  return a;
}

WorkerLease& WorkerPool::Add(const std::string& id, const v1::RegisterWorkerRequest& info, absl::Time now) {
  order_.push_back(id);
  return leases_.try_emplace(id, id, info, now).first->second;
}

WorkerLease* WorkerPool::Find(const std::string& id) {
  auto it = leases_.find(id);
  return it == leases_.end() ? nullptr : &it->second;
}

const WorkerLease* WorkerPool::Find(const std::string& id) const {
  auto it = leases_.find(id);
  return it == leases_.end() ? nullptr : &it->second;
}

const WorkerLease* WorkerPool::FindBySession(absl::string_view session) const {
  const WorkerLease* w = Find(std::string(WorkerLease::WorkerIdOfSession(session)));
  return w != nullptr && w->SessionMatches(session) ? w : nullptr;
}

void WorkerPool::Remove(const std::string& id) {
  leases_.erase(id);
  order_.erase(std::remove(order_.begin(), order_.end(), id), order_.end());
}

std::vector<const WorkerLease*> WorkerPool::InOrder() const {
  std::vector<const WorkerLease*> all;
  all.reserve(order_.size());
  for (const std::string& id : order_) all.push_back(&leases_.at(id));
  return all;
}

std::vector<WorkerLease*> WorkerPool::Idle() {
  std::vector<WorkerLease*> idle;
  for (const std::string& id : order_) {
    WorkerLease& w = leases_.at(id);
    if (w.idle()) idle.push_back(&w);
  }
  return idle;
}

size_t WorkerPool::CountIdle() const {
  return static_cast<size_t>(
      std::count_if(leases_.begin(), leases_.end(), [](const auto& entry) { return entry.second.idle(); }));
}

std::vector<std::string> WorkerPool::Expired(absl::Time now, absl::Duration timeout) const {
  std::vector<std::string> expired;
  for (const auto& [id, w] : leases_) {
    if (w.ExpiredAt(now, timeout)) expired.push_back(id);
  }
  return expired;
}

int WorkerPool::Returning(const std::string& job_id, int running) const {
  int n = 0;
  for (const auto& [id, w] : leases_) n += !w.idle() && w.job_id() == job_id && w.generation() != running;
  return n;
}

}  // namespace gradsync::coordinator

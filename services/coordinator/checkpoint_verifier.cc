#include "checkpoint_verifier.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "gradsync/ckpt/checkpoint.h"

namespace gradsync::coordinator {
namespace {

// The sizes and modification times of everything in `dir` (the manifest and the parts it lists
// are all there is), in name order; "unreadable" when it cannot be listed (a verdict on a
// missing directory holds until it reappears).
std::string Fingerprint(const std::string& dir) {
  constexpr char kUnreadable[] = "unreadable";
  std::error_code ec;
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const auto size = entry.file_size(ec);
    if (ec) return kUnreadable;
    const auto mtime = entry.last_write_time(ec).time_since_epoch().count();
    if (ec) return kUnreadable;
    files[entry.path().filename().string()] = absl::StrCat(size, "@", mtime);
  }
  if (ec) return kUnreadable;
  std::string out;
  for (const auto& [name, stamp] : files) absl::StrAppend(&out, name, "=", stamp, ";");
  return out;
}

}  // namespace

CheckpointVerifier::CheckpointVerifier(std::function<void()> on_verdict)
    : on_verdict_(std::move(on_verdict)), thread_([this] { Loop(); }) {}

CheckpointVerifier::~CheckpointVerifier() { Shutdown(); }

void CheckpointVerifier::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

CheckpointVerifier::Result CheckpointVerifier::Check(const std::string& dir, int64_t epoch) {
  const std::string fingerprint = Fingerprint(dir);
  absl::MutexLock lock(&mu_);
  if (auto it = known_.find(dir);
      it != known_.end() && it->second.epoch >= epoch && it->second.fingerprint == fingerprint) {
    return it->second.result;
  }
  if (auto q = queued_.find(dir); q == queued_.end() || q->second < epoch) {
    queued_[dir] = epoch;
    queue_.emplace_back(dir, epoch);
  }
  return Result{};
}

CheckpointVerifier::Result CheckpointVerifier::CheckNow(const std::string& dir, int64_t epoch) {
  if (Result r = Check(dir, epoch); r.verdict != Verdict::kPending) return r;
  const std::string fingerprint = Fingerprint(dir);
  const absl::Status status = ckpt::VerifyCheckpoint(dir);
  Record(dir, epoch, fingerprint, status);
  return Result{status.ok() ? Verdict::kVerified : Verdict::kCorrupt, status};
}

void CheckpointVerifier::Record(const std::string& dir, int64_t epoch, const std::string& fingerprint,
                                absl::Status status) {
  absl::MutexLock lock(&mu_);
  Known& k = known_[dir];
  if (k.epoch > epoch) return;  // a newer verdict arrived meanwhile
  k.epoch = epoch;
  k.fingerprint = fingerprint;
  k.result = Result{status.ok() ? Verdict::kVerified : Verdict::kCorrupt, std::move(status)};
}

void CheckpointVerifier::Loop() {
  for (;;) {
    std::pair<std::string, int64_t> next;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_ || !queue_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (stop_) return;
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    // The fingerprint first: a change while hashing makes the next Check verify again.
    const std::string fingerprint = Fingerprint(next.first);
    absl::Status status = ckpt::VerifyCheckpoint(next.first);
    Record(next.first, next.second, fingerprint, std::move(status));
    {
      absl::MutexLock lock(&mu_);
      if (auto q = queued_.find(next.first); q != queued_.end() && q->second <= next.second) queued_.erase(q);
    }
    on_verdict_();
  }
}

}  // namespace gradsync::coordinator

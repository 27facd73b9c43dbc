#include "job_writer.h"

#include <limits>
#include <utility>

#include "gradsync/core/log.h"

namespace gradsync::coordinator {

absl::StatusOr<std::vector<v1::Job>> JobWriter::LoadAll() {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::vector<v1::Job>> jobs = store_->List("", std::numeric_limits<int>::max());
  if (!jobs.ok()) return jobs.status();
  for (const v1::Job& job : *jobs) {
    written_[job.id()] = kFirstVersion;
    stored_.Put(job, kFirstVersion);
  }
  return jobs;
}

absl::StatusOr<std::map<std::string, v1::GenerationRecord>> JobWriter::LoadGenerations() {
  absl::MutexLock lock(&mu_);
  return store_->ListGenerations();
}

absl::Status JobWriter::Insert(const v1::Job& job) {
  absl::MutexLock lock(&mu_);
  absl::Status s = store_->Insert(job);
  if (s.ok()) {
    written_[job.id()] = kFirstVersion;
    stored_.Put(job, kFirstVersion);
    if (unwritten_.empty()) SetHealthLocked(absl::OkStatus());
  } else if (!absl::IsAlreadyExists(s)) {
    failed_insert_bytes_ = job.ByteSizeLong();
    SetHealthLocked(s);
  }
  return s;
}

absl::Status JobWriter::Write(std::vector<JobSnapshot> snapshots) {
  // Calls that changed nothing do not queue behind a write in progress.
  if (snapshots.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<std::string, int64_t>> wanted;
  for (JobSnapshot& s : snapshots) {
    wanted.emplace_back(s.job.id(), s.version);
    JobSnapshot& kept = unwritten_[s.job.id()];
    if (kept.version < s.version) kept = std::move(s);
  }
  FlushLocked();
  for (const auto& [id, version] : wanted) {
    if (written_[id] < version) return write_error_;
  }
  return absl::OkStatus();
}

void JobWriter::FlushLocked() {
  for (auto it = unwritten_.begin(); it != unwritten_.end();) {
    const JobSnapshot& s = it->second;
    int64_t& written = written_[s.job.id()];
    if (written >= s.version) {
      it = unwritten_.erase(it);
      continue;
    }
    if (absl::Status status = store_->UpdateWithGeneration(s.job, s.running); !status.ok()) {
      write_error_ = std::move(status);
      ++it;
      continue;
    }
    written = s.version;
    stored_.Put(s.job, s.version);
    it = unwritten_.erase(it);
  }
  SetHealthLocked(unwritten_.empty() ? absl::OkStatus() : write_error_);
}

void JobWriter::SetHealthLocked(absl::Status health) {
  const bool was_ok = stored_.health().ok();
  if (was_ok && !health.ok()) {
    GS_LOG(ERROR) << "job writes fail, health is NOT_SERVING until they succeed again: " << health;
  } else if (!was_ok && health.ok()) {
    GS_LOG(INFO) << "job writes succeed again, health is SERVING";
  }
  stored_.SetHealth(std::move(health));
}

void JobWriter::Retry() {
  // Without taking mu_, which a write in progress holds across its I/O.
  if (stored_.health().ok()) return;
  absl::MutexLock lock(&mu_);
  if (stored_.health().ok()) return;
  if (!unwritten_.empty()) {
    FlushLocked();
    return;
  }
  SetHealthLocked(store_->Probe(failed_insert_bytes_));
}

}  // namespace gradsync::coordinator

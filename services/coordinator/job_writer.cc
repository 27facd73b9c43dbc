#include "job_writer.h"

#include <limits>
#include <utility>

#include "gradsync/core/log.h"

namespace gradsync::coordinator {

std::vector<v1::Job> JobWriter::LoadAll() {
  absl::MutexLock lock(&mu_);
  return store_->List("", std::numeric_limits<int>::max());
}

absl::Status JobWriter::Insert(const v1::Job& job) {
  absl::MutexLock lock(&mu_);
  absl::Status s = store_->Insert(job);
  if (s.ok()) written_[job.id()] = 0;
  return s;
}

void JobWriter::Write(std::vector<JobSnapshot> snapshots) {
  // Calls that changed nothing do not queue behind a write in progress.
  if (snapshots.empty()) return;
  absl::MutexLock lock(&mu_);
  for (const JobSnapshot& s : snapshots) {
    int64_t& written = written_[s.job.id()];
    if (written >= s.version) continue;
    if (absl::Status status = store_->Update(s.job); !status.ok()) {
      GS_LOG(ERROR) << "persisting job " << s.job.id() << ": " << status;
      continue;
    }
    written = s.version;
  }
}

}  // namespace gradsync::coordinator

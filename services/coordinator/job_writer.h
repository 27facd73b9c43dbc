// The only way into the coordinator's JobStore. The coordinator changes jobs under its lock and
// takes a JobSnapshot of each changed job there; it writes the snapshots here after releasing the
// lock, so no call waits on the lock behind a database write (a slow disk delays the caller that
// changed the job, never a heartbeat of another).
//
// Why no write is lost or reordered: every change of a job bumps its version under the
// coordinator's lock, so versions order a job's snapshots as its changes happened. Writes are
// serialised here, and a snapshot older than one already written is skipped. Two calls that race
// to write after unlocking therefore leave the newer state in the store, whichever writes first;
// and each change is covered by the snapshot its own call took, or by a newer one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "gradsync/v1/job.pb.h"
#include "job_store.h"

namespace gradsync::coordinator {

// A job as it was at one version (JobRuntime::version), to be written.
struct JobSnapshot {
  v1::Job job;
  int64_t version = 0;
};

// Thread-safe. Callers must not hold the coordinator's lock.
class JobWriter {
 public:
  explicit JobWriter(std::unique_ptr<JobStore> store) : store_(std::move(store)) {}

  // Every stored job, in creation order (for recovery).
  std::vector<v1::Job> LoadAll();
  // Stores a new job; it must precede any Write of the job. The store's error (ALREADY_EXISTS,
  // INTERNAL) on failure.
  absl::Status Insert(const v1::Job& job);
  // Writes each snapshot unless the store already holds that job at the same or a newer version.
  // Store errors are logged: the job stays correct in memory and its next change writes it again.
  void Write(std::vector<JobSnapshot> snapshots);

 private:
  absl::Mutex mu_;
  std::unique_ptr<JobStore> store_ ABSL_GUARDED_BY(mu_);
  // The version of each job the store holds, for jobs written since this coordinator started.
  std::map<std::string, int64_t> written_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync::coordinator

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
//
// Durable or loud: a snapshot whose write fails is kept (the newest per job) and written again by
// the next Write or Retry; meanwhile the store is unhealthy, and StoredJobs goes on showing the
// job as it was last written. What the API shows is therefore always what a restarted coordinator
// would load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "gradsync/v1/coordinator.pb.h"
#include "gradsync/v1/job.pb.h"
#include "job_store.h"
#include "stored_jobs.h"

namespace gradsync::coordinator {

// A job as it was at one version (JobRuntime::version), to be written, with the record of its
// running generation at that version (no ranks when none runs), which the store keeps beside it.
struct JobSnapshot {
  v1::Job job;
  int64_t version = 0;
  v1::GenerationRecord running;
};

// Thread-safe. Callers must not hold the coordinator's lock.
class JobWriter {
 public:
  // A job loaded or inserted is at this version (JobRuntime's first).
  static constexpr int64_t kFirstVersion = 1;

  explicit JobWriter(std::unique_ptr<JobStore> store) : store_(std::move(store)) {}

  // Every stored job, in creation order (for recovery), now also in stored(). The store's error
  // when it cannot be read.
  absl::StatusOr<std::vector<v1::Job>> LoadAll();
  // The stored records of running generations, by job id (for recovery: the generations to adopt).
  absl::StatusOr<std::map<std::string, v1::GenerationRecord>> LoadGenerations();
  // Stores a new job; it must precede any Write of the job. The store's error (ALREADY_EXISTS,
  // UNAVAILABLE, ...) on failure, which also makes the store unhealthy until a write succeeds.
  absl::Status Insert(const v1::Job& job);
  // Writes each snapshot unless the store already holds that job at the same or a newer version,
  // together with the snapshots whose writes failed before. OK once every job given is stored at
  // its snapshot's version or newer; otherwise the store's error, and the snapshot is kept to be
  // written again.
  absl::Status Write(std::vector<JobSnapshot> snapshots);
  // For a periodic probe: while the store is unhealthy, writes the kept snapshots again, or when
  // none is left, probes the store with a write as large as the one that failed. A success makes
  // the store healthy again.
  void Retry();

  // The jobs as stored, and the store's health.
  StoredJobs& stored() { return stored_; }

 private:
  // Writes every kept snapshot and sets the health from the outcome.
  void FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets the store's health, logging when it changes.
  void SetHealthLocked(absl::Status health) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::unique_ptr<JobStore> store_ ABSL_GUARDED_BY(mu_);
  // The version of each job the store holds, for jobs loaded or written since this coordinator started.
  std::map<std::string, int64_t> written_ ABSL_GUARDED_BY(mu_);
  // The newest snapshot of each job that is not written yet, and the error of its last write.
  std::map<std::string, JobSnapshot> unwritten_ ABSL_GUARDED_BY(mu_);
  absl::Status write_error_ ABSL_GUARDED_BY(mu_);
  // The size of the insert that failed last, for the probe.
  size_t failed_insert_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Its own lock, taken under mu_ and never the other way round.
  StoredJobs stored_;
};

}  // namespace gradsync::coordinator

// One job from its creation on: the job resource clients read (state, events, checkpoints), the
// version watchers wait on, the restart and checkpoint policy, and the generation that runs now.
// Not thread-safe: the coordinator owns its jobs under its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "checkpoint_verifier.h"
#include "generation.h"
#include "recovery_ledger.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::coordinator {

// The range of ranks a job runs with (both worldSize for a fixed-size job).
int MinWorkers(const v1::JobSpec& spec);
int MaxWorkers(const v1::JobSpec& spec);

// The worker pool as a queued job sees it when deciding whether to start.
struct PoolView {
  size_t idle = 0;
  size_t registered = 0;
  // Workers still finishing the job's previous generation (told to abort, not back yet).
  int returning = 0;
};

class JobRuntime {
 public:
  explicit JobRuntime(v1::Job job) : job_(std::move(job)), recovery_(job_.recovery()) {}

  const v1::Job& job() const { return job_; }
  const std::string& id() const { return job_.id(); }
  const v1::JobSpec& spec() const { return job_.spec(); }
  v1::JobState state() const { return job_.state(); }
  // SUCCEEDED, FAILED or CANCELLED: nothing changes the job any more.
  bool ended() const;
  // Bumped by every Touch; WaitJobChange hands it to watchers.
  int64_t version() const { return version_; }

  // Appends an event at `now` (the oldest beyond a thousand are dropped) and logs it.
  void AddEvent(const std::string& type, const std::string& message, absl::Time now);
  // Records that the job changed at `now`: a new version for watchers, and update_time. The
  // caller persists the job.
  void Touch(absl::Time now);

  // --- State. ---

  // Returns whether the reason changed.
  bool SetReason(const std::string& reason);
  // Ends the job in `state` at `now` (its end_time).
  void Finish(v1::JobState state, const std::string& reason, absl::Time now);
  // training.maxRestarts (3 when unset): how many restarts the job may have.
  int restart_budget() const;
  bool CanRestart() const { return job_.restarts() < restart_budget(); }
  // Waits for its next generation (RESTARTING), counting a restart.
  void Restart(const std::string& reason);
  // Waits for its next generation (RESTARTING) without counting a restart: a rescale.
  void Requeue(const std::string& reason);
  // A preemption: the coordinator stopped in order while the current generation ran, and the
  // newest committed checkpoint was taken then (scancel, a time limit, a drain). Notes it with a
  // "Preempted" event naming the generation and that checkpoint's step.
  void NotePreempted(absl::Time now);
  // Whether the current generation was preempted and nothing was committed since: its end loses
  // no work, so it is requeued, not counted as a restart.
  bool Preempted() const;
  // Records that a rank of the job failed during setup on worker `worker_id` (before its first
  // training step) and returns on how many distinct workers that has happened. Twice on different
  // workers, the job itself is what fails: the coordinator fails it instead of trying the fleet.
  int AddSetupFailure(const std::string& worker_id);
  // Whether a rank of the job failed during setup on `worker_id`: the scheduler tries the others
  // first.
  bool FailedSetupOn(const std::string& worker_id) const { return setup_failed_on_.count(worker_id) > 0; }
  // Rank 0's latest progress; the first step's loss is the job's initial loss. Without a
  // validation loss it keeps the last one the job had (a restarted generation has not evaluated).
  void SetProgress(const v1::JobProgress& progress);
  void SetResult(const v1::JobResult& result) { *job_.mutable_result() = result; }
  // What a failing rank reported the job had reached (the step, the first and latest loss); the
  // furthest is kept. A job that ends without the ranks' result (FAILED, or CANCELLED with its
  // ranks aborted) reports the furthest of these, its progress and its checkpoints (Finish).
  void NoteReached(const v1::JobResult& reached);

  // --- Cancelling a running job. ---

  // The job is cancelled while its generation runs: its ranks stop at their next step boundary,
  // saving the weights, until `deadline`, after which the generation is aborted.
  void RequestStop(absl::Time deadline) { stop_deadline_ = deadline; }
  bool stopping() const { return stop_deadline_.has_value(); }
  absl::Time stop_deadline() const { return stop_deadline_.value_or(absl::InfiniteFuture()); }

  // --- Generations. ---

  // The generation that runs now; nullptr between generations.
  Generation* generation() { return generation_.get(); }
  const Generation* generation() const { return generation_.get(); }
  // The running generation if it is number `number`; nullptr otherwise.
  Generation* RunningGeneration(int number);
  // Starts the next generation on `ranks` (worker ids by rank) at `now`: RUNNING, no reason.
  Generation& StartGeneration(std::vector<std::string> ranks, absl::Time now);
  // Keeps the RUNNING job's generation, which a previous coordinator scheduled on the ranks of
  // `record` (of the job's generation number), awaiting their return from `now` until `deadline`.
  Generation& KeepGeneration(const v1::GenerationRecord& record, absl::Time now, absl::Time deadline);
  // Ends the running generation and hands it back; nullptr when none ran.
  std::unique_ptr<Generation> EndGeneration() { return std::move(generation_); }

  // Whether the queued job starts now, with `pool`, and if not why (for state_reason). An
  // elastic job's first generation waits `last_call` for more workers once minWorkers are idle.
  bool ReadyToStart(const PoolView& pool, absl::Time now, absl::Duration last_call, std::string* reason);
  // The job left the queue: a later last call starts afresh.
  void ClearLastCall() { quorum_since_.reset(); }

  // --- Live recovery (recovery_ledger.h). ---

  RecoveryLedger& recovery() { return recovery_; }
  const RecoveryLedger& recovery() const { return recovery_; }
  // Copies the ledger's account into the job, which clients read: after its Started and Stepped.
  void StoreRecoveryStats() { *job_.mutable_recovery() = recovery_.stats(); }

  // --- Checkpoints. ---

  // The job's own directory, where its weights and checkpoints go and nothing of another job's:
  // <artifact_root>/<job id>, or its subdirectory checkpoint.dir. A checkpoint.dir that is no
  // subdirectory name (a job stored before the rule) is ignored.
  std::string Dir(const std::string& artifact_root) const;
  // Asks the ranks to checkpoint at their next step boundary; the next commit clears it.
  void RequestCheckpoint() { checkpoint_requested_ = true; }
  bool checkpoint_requested() const { return checkpoint_requested_; }
  // checkpoint.keep: how many committed checkpoints the job keeps.
  int keep() const;
  // Records a committed checkpoint; the job lists the newest keep() of them.
  void CommitCheckpoint(const v1::CheckpointManifest& m);
  // Since this coordinator started, for metrics.
  int64_t checkpoints_committed() const { return checkpoints_committed_; }
  int64_t checkpoint_bytes_total() const { return checkpoint_bytes_total_; }
  // Stalls found in the job's generations since this coordinator started, for metrics.
  void CountStall() { ++stalls_; }
  int64_t stalls() const { return stalls_; }
  // Whether `verifier` has reached a verdict on the checkpoint the job would resume from (the
  // newest that is not known corrupt), asking for one otherwise; if not, `reason` says so.
  bool ResumeVerified(const std::string& checkpoint_root, CheckpointVerifier& verifier, std::string* reason);
  // The newest committed checkpoint whose files verify, by `verifier`'s verdicts (verifying on
  // this thread only one that changed since). A corrupt one is set aside (renamed, so retention
  // and `checkpoint list` skip it) and dropped from the job with a CheckpointCorrupt event at
  // `now`; one outside `checkpoint_root` (the job's own, Dir()/checkpoints) is dropped untouched.
  // With none of its own: the checkpoint of another job it continues (training.resumeFrom), if
  // that verifies (ContinuationPoint).
  std::optional<v1::CheckpointManifest> ResumePoint(const std::string& checkpoint_root, CheckpointVerifier& verifier,
                                                    absl::Time now);

 private:
  // Job.continued_from when it verifies; otherwise a ContinuationCorrupt event at `now`, and none.
  std::optional<v1::CheckpointManifest> ContinuationPoint(CheckpointVerifier& verifier, absl::Time now);
  v1::Job job_;
  RecoveryLedger recovery_;
  int64_t version_ = 1;
  std::unique_ptr<Generation> generation_;
  bool checkpoint_requested_ = false;
  int64_t checkpoints_committed_ = 0;
  int64_t checkpoint_bytes_total_ = 0;
  int64_t stalls_ = 0;
  v1::JobResult reached_;
  std::optional<absl::Time> stop_deadline_;
  // Elastic jobs: when enough workers for minWorkers became idle (the last call's start).
  std::optional<absl::Time> quorum_since_;
  // Workers on which a rank of the job failed during setup (since this coordinator started).
  std::set<std::string> setup_failed_on_;
};

}  // namespace gradsync::coordinator

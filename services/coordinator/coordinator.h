// The coordinator's logic, free of RPC types beyond the protos. Coordinator orchestrates state
// that its collaborators own: each job's JobRuntime and the Generation it runs (ranks, checkpoint
// parts, results, stall watch), the WorkerPool's leases, the rendezvous KvStore, and the JobWriter
// in front of the JobStore. One lock, mu_, guards the in-memory state; jobs changed under it are
// written to the store after it is released. The job API reads jobs as stored (StoredJobs), so it
// never shows a state that is not written. The gRPC handlers only translate to and from these
// calls. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "assignment_waits.h"
#include "checkpoint_verifier.h"
#include "gradsync/v1/coordinator.pb.h"
#include "gradsync/v1/job.pb.h"
#include "job_artifacts.h"
#include "job_logs.h"
#include "job_runtime.h"
#include "job_store.h"
#include "job_writer.h"
#include "kv_store.h"
#include "model_budget.h"
#include "worker_pool.h"
#include "worker_roster.h"

namespace gradsync::coordinator {

struct CoordinatorOptions {
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // A worker silent for this long is lost; its generation is aborted.
  absl::Duration lease_timeout = absl::Seconds(10);
  // After a restart, how long a generation found RUNNING waits for its workers to report back with
  // the ranks they run (adoption.h) before it restarts from its last checkpoint. Unset: twice
  // lease_timeout. Zero: no adoption; running jobs restart at once.
  std::optional<absl::Duration> adopt_grace;
  // Each job's weights and checkpoints go to its own directory <artifact_root>/<job id>
  // (JobRuntime::Dir); the coordinator writes manifests and deletes old checkpoints only there.
  std::string artifact_root = "/tmp/gradsync/artifacts";
  // Where job data may be read: every data path of a spec must resolve inside one of these, and
  // relative paths start at the first (gradsync/spec/job_paths.h). Workers get them with each
  // assignment and check the files again before reading them.
  std::vector<std::string> data_roots = {"/tmp/gradsync/data"};
  // Elastic jobs (minWorkers < maxWorkers): once minWorkers are idle, how long to wait for more
  // before starting with fewer than maxWorkers (torchrun's "last call").
  absl::Duration rendezvous_last_call = absl::Seconds(2);
  // A running elastic job below maxWorkers grows when workers are idle and its generation has run
  // at least this long: it checkpoints, and the next generation takes the idle workers.
  absl::Duration scale_up_delay = absl::Seconds(30);
  // A generation whose ranks finish no collective and no step for this long (or for three step
  // times, if longer) is stalled: an event names the rank behind and where the others wait.
  absl::Duration stall_timeout = absl::Seconds(5);
  // A running job that is cancelled stops at its ranks' next step boundary, writing the final
  // checkpoint and weights; if its ranks have not all reported within this, the generation is
  // aborted and the job ends CANCELLED without them. Zero: cancels abort at once.
  absl::Duration cancel_grace = absl::Seconds(30);
  // Where the job logs are kept across restarts (job_log_journal.h); empty: in memory only.
  std::string job_log_file;
  // What a worker gives one job's model (parameters, gradients, AdamW's moments: model_budget.h);
  // a larger model is refused at submission.
  int64_t max_model_bytes = kDefaultMaxModelBytes;
  // Injected so lease expiry can be tested without sleeping.
  std::function<absl::Time()> clock = [] { return absl::Now(); };
};

class Coordinator {
 public:
  Coordinator(CoordinatorOptions options, std::unique_ptr<JobStore> store);
  ~Coordinator();

  // Starts the lease-checking thread.
  void Start();
  // Stops the thread and releases every blocked call with CANCELLED. Idempotent.
  void Shutdown();

  // --- Jobs. Names are "jobs/{id}" or the bare id; NOT_FOUND for an unknown job. Jobs are
  // returned as stored. A call whose change cannot be stored fails with the store's error
  // (UNAVAILABLE for a full disk, naming the database); the change stays in memory and is written
  // again by a later call or RetryStoreWrites. ---

  // Fills defaults, validates (INVALID_ARGUMENT naming the field, also for a model over
  // max_model_bytes), stores, queues and tries to schedule. The job exists once its row is
  // inserted: only a failed insert fails the call.
  // Data paths are first resolved inside the data roots (INVALID_ARGUMENT naming the field, the
  // path and the roots), and the job keeps the resolved paths.
  absl::StatusOr<v1::Job> CreateJob(v1::JobSpec spec);
  absl::StatusOr<v1::Job> GetJob(const std::string& name);
  // INVALID_ARGUMENT for a negative page size or an unknown page token.
  absl::StatusOr<v1::ListJobsResponse> ListJobs(int page_size, const std::string& page_token);
  // A job that waits ends CANCELLED at once. A running one goes on RUNNING ("cancelling: ...")
  // while its ranks stop at the next step boundary, write the final checkpoint and weights and
  // report, then ends CANCELLED with that result; a second cancel, or cancel_grace running out,
  // aborts the ranks and ends it at once. FAILED_PRECONDITION if the job already ended.
  absl::StatusOr<v1::Job> CancelJob(const std::string& name);
  // The files in job `name`'s own directory, <artifact_root>/<job id> (job_artifacts.h).
  // NOT_FOUND for an unknown job.
  absl::StatusOr<JobArtifacts> Artifacts(const std::string& name);
  // Waits up to `timeout` for the job to change after version `seen` (0 returns at once).
  // Returns the job and its new version.
  absl::StatusOr<std::pair<v1::Job, int64_t>> WaitJobChange(const std::string& name, int64_t seen,
                                                            absl::Duration timeout);

  // --- Workers. ---

  // Registers an idle worker (request.running is ignored).
  v1::RegisterWorkerResponse RegisterWorker(const v1::RegisterWorkerRequest& request);
  // Registers a worker that runs request.running, a rank of a generation the previous coordinator
  // scheduled, and gives it that rank back (response.adopted) under its old worker id, with a new
  // session. `session` is the one the worker held, which it must present. FAILED_PRECONDITION when
  // the job's generation awaits no adoption (unknown job, another generation, not running, all
  // ranks back) or the rank is back already; INVALID_ARGUMENT, UNAUTHENTICATED or PERMISSION_DENIED
  // (adoption.h) for a claim the stored generation does not bear out. Errors name the field.
  absl::StatusOr<v1::RegisterWorkerResponse> AdoptWorker(const v1::RegisterWorkerRequest& request,
                                                         absl::string_view session);
  v1::HeartbeatResponse Heartbeat(const v1::HeartbeatRequest& request);
  // The pool: registered workers in registration order (idle, or busy with the rank they hold),
  // then the workers lost within the last hour (LostWorkers), oldest loss first.
  v1::ListWorkersResponse ListWorkers();
  // The next assignment of the worker, waiting up to `timeout` (nullopt when none came).
  // NOT_FOUND if the worker is unknown or was declared lost.
  absl::StatusOr<std::optional<v1::Assignment>> NextAssignment(const std::string& worker_id, absl::Duration timeout);
  absl::StatusOr<v1::EpochPlan> GetEpochPlan(const std::string& job_id, int epoch);
  // A rank's outcome; the store's error if the change it made cannot be stored. When every rank of the generation has
  // succeeded, their parameter digests are compared and the job ends SUCCEEDED or FAILED ("replica divergence"). A
  // rank's error restarts the job from its last committed checkpoint while the restart budget lasts; once ranks failed
  // during setup (request.during_setup) on two different workers, it fails the job.
  absl::Status ReportResult(const v1::ReportResultRequest& request);

  // A rank wrote its part of the checkpoint at a step. The report that completes the set commits
  // the checkpoint: MANIFEST.json is written last, the job records it, and retention runs.
  // FAILED_PRECONDITION for a report of a generation that is no longer running; the store's error
  // if the commit cannot be stored (then old checkpoints are kept).
  absl::StatusOr<v1::ReportCheckpointResponse> ReportCheckpoint(const v1::ReportCheckpointRequest& request);

  // A rank's own log lines (job_logs.h), kept for GetJobLogs. FAILED_PRECONDITION when the
  // generation no longer runs; PERMISSION_DENIED when the worker does not hold the rank;
  // INVALID_ARGUMENT for more than 500 lines.
  absl::Status ReportLogs(const v1::ReportLogsRequest& request);
  // A job's lines after `after_seq`. NOT_FOUND for an unknown job; INVALID_ARGUMENT naming
  // "limit", "rank" or "afterSeq" when negative.
  absl::StatusOr<v1::GetJobLogsResponse> GetJobLogs(const v1::GetJobLogsRequest& request);

  // Asks a running job's ranks to checkpoint at their next step boundary.
  // FAILED_PRECONDITION if the job is not running.
  absl::StatusOr<v1::Job> RequestCheckpoint(const std::string& name);
  // Asks every running job to checkpoint (preemption), then waits up to `timeout` for all of them
  // to commit one; a job that committed one at or after `since` (the stop signal: its workers may
  // have been signalled too, and checkpointed first) needs none. Each job saved so is noted as
  // preempted (JobRuntime::NotePreempted). Returns how many were saved.
  int CheckpointAllRunning(absl::Duration timeout, absl::Time since);

  // Declares workers lost whose lease expired and fails their generations, and restarts kept
  // generations whose ranks did not all come back in time. Called by the lease thread; public so
  // tests drive it with a fake clock.
  void CheckLeases();

  KvStore& kv() { return kv_; }

  // --- The store's health. ---

  // OK while job writes succeed; the error of the failed write otherwise (the coordinator is then
  // NOT_SERVING over grpc.health.v1 and /healthz).
  absl::Status StoreHealth();
  // Calls `listener` with the store's health now and at every change. It runs under a lock of
  // the coordinator's and must not call back into it. nullptr stops the calls.
  void OnStoreHealthChange(std::function<void(const absl::Status&)> listener);
  // While the store is unhealthy: writes again what failed to be written, or probes the store
  // with a write. Called by the lease thread; public so tests drive it.
  void RetryStoreWrites();

  // --- Worker sessions: the credential RegisterWorker issues, bound to the rank the worker holds.

  // OK when `session` is the session of registered worker `worker_id`. NOT_FOUND when no such
  // worker is registered (lost, or the coordinator restarted: it must register again);
  // UNAUTHENTICATED when the session is missing or not that worker's.
  absl::Status CheckWorkerSession(absl::string_view session, const std::string& worker_id);
  // OK when the caller may use the rendezvous namespace of (`job_id`, `generation`). A namespace
  // of a job this coordinator knows belongs to the ranks of that generation: the session must be
  // that of a worker holding one. A namespace of no known job (a stand-alone rendezvous, such as
  // a benchmark's) is open to whoever the cluster token admits.
  absl::Status CheckRendezvousAccess(absl::string_view session, const std::string& job_id, int generation);
  // OK when the session's worker holds a rank of job `job_id`, in whichever generation.
  absl::Status CheckJobMember(absl::string_view session, const std::string& job_id);

  // Figures for the coordinator's /metrics, read at scrape time.
  struct Snapshot {
    std::map<v1::JobState, int> jobs_by_state;
    int idle_workers = 0;
    int assigned_workers = 0;
    // Per job: generations started after the first (each one a restart).
    std::map<std::string, int64_t> restarts;
    struct Checkpoints {
      int64_t committed = 0;
      int64_t bytes_total = 0;
      double last_seconds = 0;
      int64_t last_bytes = 0;
      // When the newest committed checkpoint was committed, seconds since the Unix epoch.
      double last_commit_time = 0;
    };
    std::map<std::string, Checkpoints> checkpoints;
    // Jobs not yet ended, and those that ended within the last day: each one's state and reason.
    struct JobInfo {
      std::string id;
      v1::JobState state = v1::JOB_STATE_UNSPECIFIED;
      std::string reason;
    };
    std::vector<JobInfo> jobs;
    // Per job of `jobs`, since this coordinator started: stalls found (Stalled events).
    std::map<std::string, int64_t> stalls;
    // Per job of `jobs` that recovered from a failure: its account (stored with the job).
    std::map<std::string, v1::RecoveryStats> recoveries;
    // Workers dropped for missed heartbeats since this coordinator started.
    int64_t workers_lost = 0;
    // Jobs whose workers are training now (RUNNING), for alerts that must ignore finished jobs.
    std::vector<std::string> running;
  };
  Snapshot TakeSnapshot();

  // For tests: idle workers' assignment streams waiting now, and how often their readiness has
  // been checked (on entry and at each wake-up).
  struct AssignmentWaitStats {
    int waiters = 0;
    int64_t checks = 0;
  };
  AssignmentWaitStats TEST_AssignmentWaits();

 private:
  // The lock of one mutating call; see the class comment at its definition below.
  class StateLock;

  // Loads the stored jobs: pending ones queue again; running ones keep their generation when
  // `running` holds its record (KeepGenerationLocked), and restart otherwise.
  void RecoverLocked(std::vector<v1::Job> stored, const std::map<std::string, v1::GenerationRecord>& running)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // --- Adoption (coordinator_adoption.cc). ---
  absl::Duration AdoptGrace() const;
  // Keeps the running job's generation that `record` (nullptr: none stored) describes, awaiting its
  // ranks until the grace ends; false when it cannot (no record, another generation, no grace).
  bool KeepGenerationLocked(JobRuntime* rt, const v1::GenerationRecord* record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Every rank is back: the GenerationAdopted event, and the generation runs as any other.
  void CompleteAdoptionLocked(JobRuntime* rt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Restarts kept generations whose grace ended with ranks missing, naming them.
  void CheckAdoptionsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What the store keeps of the job's running generation: each rank's worker, host and session
  // digest (no ranks when none runs).
  v1::GenerationRecord GenerationRecordLocked(const JobRuntime& rt) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The answer to a registration that made `lease`.
  v1::RegisterWorkerResponse RegistrationOf(const WorkerLease& lease) const;

  // Allocates a fresh job id and fills the new job's fields; UNAVAILABLE while shutting down. The
  // id stays free while create_mu_ is held.
  absl::StatusOr<v1::Job> NewJob(v1::JobSpec spec) ABSL_EXCLUSIVE_LOCKS_REQUIRED(create_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  // The checkpoint a new job continues (training.resumeFrom), from the stored job it names; none
  // without the field. continuation.h's refusals, or INVALID_ARGUMENT for a job that is not stored.
  absl::StatusOr<std::optional<v1::CheckpointManifest>> ContinuationOf(const v1::JobSpec& spec);
  JobRuntime* FindJobLocked(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The running generation `generation` of job `job_id` in which `worker_id` holds `rank`, for a
  // report of that rank: FAILED_PRECONDITION when no such generation runs, PERMISSION_DENIED when
  // the worker does not hold the rank.
  absl::StatusOr<Generation*> ReportedGenerationLocked(const std::string& job_id, int generation,
                                                       const std::string& worker_id, int rank)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job as stored; a call returns it once its StateLock committed.
  v1::Job StoredJob(const std::string& id);
  // FAILED_PRECONDITION with `message` about the job's state, unless that state is not stored
  // because writes fail: then the store's error, so no answer reports a state a restart would lose.
  absl::Status PreconditionLocked(const JobRuntime& rt, const std::string& message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records that the job changed: watchers wake, and the job is written to the store when the
  // call's StateLock is released.
  void TouchLocked(JobRuntime* rt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddEventLocked(JobRuntime* rt, const std::string& type, const std::string& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Snapshots of the jobs touched since the last call, for the store.
  std::vector<JobSnapshot> TakeChangesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void ScheduleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A checkpoint verdict arrived: jobs that waited for it may start.
  void OnCheckpointVerdict();
  // Starts the job's next generation on `gang`, rank r on gang[r] computing as placements[r].
  void AssignLocked(JobRuntime* rt, const std::vector<WorkerLease*>& gang, const std::vector<v1::Placement>& placements)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Asks running elastic jobs below maxWorkers to grow into `idle` workers.
  void ScaleUpLocked(size_t idle) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After the checkpoint a scale-up asked for: ends the generation and queues the job again.
  void RescaleLocked(JobRuntime* rt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void QueueLocked(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Records a heartbeat of worker `w`, which holds a rank of the job's running generation.
  void RecordBeatLocked(JobRuntime* rt, const WorkerLease& w, const v1::HeartbeatRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Flags running generations that made no progress for too long, naming who holds them up.
  void CheckStallsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends CANCELLED the cancelled jobs whose ranks did not stop within cancel_grace.
  void CheckStopsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Declares worker `id` lost at `now`: its generation fails and its lease ends.
  void LoseWorkerLocked(const std::string& id, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Ends the job's running generation: its workers are told to abort and its keys dropped.
  void EndGenerationLocked(JobRuntime* rt, const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishLocked(JobRuntime* rt, v1::JobState state, const std::string& type, const std::string& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a failure: restart the job from its last committed checkpoint when it may (the error is
  // not one a restart repeats, and the budget lasts), else fail it.
  void RestartOrFailLocked(JobRuntime* rt, const std::string& type, const std::string& reason, bool retryable)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the running generation and queues the job for its next, from its last committed
  // checkpoint: counted as a restart, or not (a preemption that lost nothing).
  void RestartLocked(JobRuntime* rt, const std::string& type, const std::string& reason, bool counted)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Once every rank of the running generation succeeded: SUCCEEDED if their digests agree.
  void CompleteLocked(JobRuntime* rt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the manifest in the job; the commit of a scale-up's checkpoint ends its generation.
  void CommitCheckpointLocked(JobRuntime* rt, const v1::CheckpointManifest& m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string NewIdLocked(const std::string& prefix) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CoordinatorOptions options_;
  KvStore kv_;
  // Has its own lock, which is never taken while holding mu_.
  JobLogStore job_logs_;
  // Has its own lock, which is never taken while holding mu_.
  JobWriter writer_;

  // Held across a CreateJob, insert included, so ids stay unique and the store's creation order is
  // the coordinator's without holding mu_ during the insert.
  absl::Mutex create_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  std::map<std::string, JobRuntime> jobs_ ABSL_GUARDED_BY(mu_);
  // Pending and restarting jobs, oldest first.
  std::vector<std::string> queue_ ABSL_GUARDED_BY(mu_);
  // Jobs touched by the call that holds mu_, to write when it releases it.
  std::set<std::string> changed_ ABSL_GUARDED_BY(mu_);
  WorkerPool workers_ ABSL_GUARDED_BY(mu_);
  // What the pool forgot of the workers declared lost, for ListWorkers.
  LostWorkers lost_workers_ ABSL_GUARDED_BY(mu_);
  // Where NextAssignment waits: woken by an assignment, a lost worker or shutdown only.
  AssignmentWaits assignment_waits_ ABSL_GUARDED_BY(mu_);
  uint64_t id_counter_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t workers_lost_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;

  std::thread lease_thread_;
  // Verifies checkpoints on a thread of its own, never under mu_; a verdict reschedules.
  CheckpointVerifier verifier_{[this] { OnCheckpointVerdict(); }};
};

// Holds the coordinator's lock for one call that may change jobs. Releasing it takes snapshots of
// the jobs the call touched, unlocks, and only then writes them through the JobWriter: the
// database I/O of a call never holds up another call's access to the coordinator's state.
class ABSL_SCOPED_LOCKABLE Coordinator::StateLock {
 public:
  explicit StateLock(Coordinator* c) ABSL_EXCLUSIVE_LOCK_FUNCTION(c->mu_);
  // Releases the lock and writes the jobs the call changed. OK once they are stored; the store's
  // error otherwise, which a call that reports an outcome returns.
  absl::Status Commit() ABSL_UNLOCK_FUNCTION();
  // Commits unless Commit ran; a failure then shows in the store's health only.
  ~StateLock() ABSL_UNLOCK_FUNCTION();
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;

 private:
  Coordinator* c_;
  bool committed_ = false;
};

// "jobs/{id}" -> "{id}"; a bare id is returned unchanged.
std::string JobIdFromName(const std::string& name);

}  // namespace gradsync::coordinator

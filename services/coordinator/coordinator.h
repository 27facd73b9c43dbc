// The coordinator's logic, free of RPC types beyond the protos: job registry, gang scheduler,
// worker membership with heartbeat leases, generation results and the rendezvous store.
// The gRPC handlers only translate to and from these calls. Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gradsync/v1/coordinator.pb.h"
#include "gradsync/v1/job.pb.h"
#include "job_store.h"
#include "kv_store.h"

namespace gradsync::coordinator {

struct CoordinatorOptions {
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // A worker silent for this long is lost; its generation is aborted.
  absl::Duration lease_timeout = absl::Seconds(6);
  // Final weights go to <artifact_dir>/<job id>/ unless the spec names a checkpoint dir.
  std::string artifact_dir = "/tmp/gradsync/artifacts";
  // Elastic jobs (minWorkers < maxWorkers): once minWorkers are idle, how long to wait for more
  // before starting with fewer than maxWorkers (torchrun's "last call").
  absl::Duration rendezvous_last_call = absl::Seconds(2);
  // A running elastic job below maxWorkers grows when workers are idle and its generation has run
  // at least this long: it checkpoints, and the next generation takes the idle workers.
  absl::Duration scale_up_delay = absl::Seconds(30);
  // A generation whose ranks finish no collective and no step for this long (or for three step
  // times, if longer) is stalled: an event names the rank behind and where the others wait.
  absl::Duration stall_timeout = absl::Seconds(5);
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

  // --- Jobs. Names are "jobs/{id}" or the bare id; NOT_FOUND for an unknown job. ---

  // Fills defaults, validates (INVALID_ARGUMENT naming the field), queues and tries to schedule.
  absl::StatusOr<v1::Job> CreateJob(v1::JobSpec spec);
  absl::StatusOr<v1::Job> GetJob(const std::string& name);
  // INVALID_ARGUMENT for a negative page size or an unknown page token.
  absl::StatusOr<v1::ListJobsResponse> ListJobs(int page_size, const std::string& page_token);
  // FAILED_PRECONDITION if the job already ended.
  absl::StatusOr<v1::Job> CancelJob(const std::string& name);
  // Waits up to `timeout` for the job to change after version `seen` (0 returns at once).
  // Returns the job and its new version.
  absl::StatusOr<std::pair<v1::Job, int64_t>> WaitJobChange(const std::string& name, int64_t seen,
                                                            absl::Duration timeout);

  // --- Workers. ---

  v1::RegisterWorkerResponse RegisterWorker(const v1::RegisterWorkerRequest& request);
  v1::HeartbeatResponse Heartbeat(const v1::HeartbeatRequest& request);
  // The next assignment of the worker, waiting up to `timeout` (nullopt when none came).
  // NOT_FOUND if the worker is unknown or was declared lost.
  absl::StatusOr<std::optional<v1::Assignment>> NextAssignment(const std::string& worker_id,
                                                               absl::Duration timeout);
  absl::StatusOr<v1::EpochPlan> GetEpochPlan(const std::string& job_id, int epoch);
  // A rank's outcome. When every rank of the generation has succeeded, their parameter digests
  // are compared and the job ends SUCCEEDED or FAILED ("replica divergence"). A rank's error
  // restarts the job from its last committed checkpoint while the restart budget lasts.
  absl::Status ReportResult(const v1::ReportResultRequest& request);

  // A rank wrote its part of the checkpoint at a step. The report that completes the set commits
  // the checkpoint: MANIFEST.json is written last, the job records it, and retention runs.
  // FAILED_PRECONDITION for a report of a generation that is no longer running.
  absl::StatusOr<v1::ReportCheckpointResponse> ReportCheckpoint(const v1::ReportCheckpointRequest& request);

  // Asks a running job's ranks to checkpoint at their next step boundary.
  // FAILED_PRECONDITION if the job is not running.
  absl::StatusOr<v1::Job> RequestCheckpoint(const std::string& name);
  // Asks every running job to checkpoint (preemption), then waits up to `timeout` for all of them
  // to commit one. Returns how many did.
  int CheckpointAllRunning(absl::Duration timeout);

  // Declares workers lost whose lease expired and fails their generations. Called by the lease
  // thread; public so tests drive it with a fake clock.
  void CheckLeases();

  KvStore& kv() { return kv_; }

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
    };
    std::map<std::string, Checkpoints> checkpoints;
    // Jobs whose workers are training now (RUNNING), for alerts that must ignore finished jobs.
    std::vector<std::string> running;
  };
  Snapshot TakeSnapshot();

 private:
  enum class WorkerState { kIdle, kAssigned };

  struct Worker {
    std::string id;
    v1::RegisterWorkerRequest info;
    absl::Time last_seen;
    WorkerState state = WorkerState::kIdle;
    std::string job_id;
    int generation = 0;
    int rank = -1;
    std::deque<v1::Assignment> inbox;
    // Set when the worker's generation ended; the next heartbeat tells it to abort.
    std::string abort_reason;
  };

  struct JobRuntime {
    v1::Job job;
    int64_t version = 1;
    // Parts reported per checkpoint step, by rank, for the current generation.
    std::map<int64_t, std::map<int, v1::ReportCheckpointRequest>> pending_checkpoints;
    // Set by RequestCheckpoint; cleared by the next commit.
    bool checkpoint_requested = false;
    // Since this coordinator started, for metrics.
    int64_t checkpoints_committed = 0;
    int64_t checkpoint_bytes_total = 0;
    // Worker id per rank of the current generation.
    std::vector<std::string> ranks;
    // When the current generation was scheduled.
    absl::Time generation_start;
    // Elastic jobs: when enough workers for minWorkers became idle (the last call's start).
    std::optional<absl::Time> quorum_since;
    // Set when the job checkpoints in order to grow; the commit ends the generation.
    bool scale_up_requested = false;
    // The current generation's ranks as their heartbeats last told, for stall diagnosis.
    std::map<int, v1::HeartbeatRequest> beats;
    // When any rank last finished a collective or a step, and rank 0's last step time.
    absl::Time last_progress;
    absl::Time last_step_change;
    absl::Duration step_time = absl::ZeroDuration();
    bool stalled = false;
    bool generation_active = false;
    std::map<int, v1::ReportResultRequest> results;
  };

  // Loads the store's jobs: pending ones queue again, running ones restart.
  void RecoverLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  JobRuntime* FindJobLocked(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TouchLocked(JobRuntime* rt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddEventLocked(JobRuntime* rt, const std::string& type, const std::string& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ScheduleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AssignLocked(JobRuntime* rt, const std::vector<Worker*>& gang, const std::vector<v1::Placement>& placements)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a queued job starts now with `idle` workers, and if not, why (for state_reason).
  bool ReadyToStartLocked(JobRuntime* rt, size_t idle, std::string* reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Workers still finishing the job's previous generation (told to abort, not back yet).
  int ReturningWorkersLocked(const JobRuntime& rt) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Asks running elastic jobs below maxWorkers to grow into `idle` workers.
  void ScaleUpLocked(size_t idle) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After the checkpoint a scale-up asked for: ends the generation and queues the job again.
  void RescaleLocked(JobRuntime* rt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records a rank's heartbeat of the job's current generation.
  void RecordBeatLocked(JobRuntime* rt, const v1::HeartbeatRequest& beat) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Flags running generations that made no progress for too long, naming who holds them up.
  void CheckStallsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string DiagnoseStallLocked(const JobRuntime& rt) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the job's current generation: its workers are told to abort and its keys dropped.
  void EndGenerationLocked(JobRuntime* rt, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishLocked(JobRuntime* rt, v1::JobState state, const std::string& type,
                    const std::string& message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FreeWorkerLocked(Worker* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a failure: restart the job from its last committed checkpoint when it may (the error is
  // not one a restart repeats, and the budget lasts), else fail it.
  void RestartOrFailLocked(JobRuntime* rt, const std::string& type, const std::string& reason, bool retryable)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The newest committed checkpoint whose files verify; corrupt ones are dropped with an event.
  std::optional<v1::CheckpointManifest> ResumePointLocked(JobRuntime* rt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string JobDirLocked(const v1::Job& job) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CompleteIfAllReportedLocked(JobRuntime* rt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string NewIdLocked(const std::string& prefix) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CoordinatorOptions options_;
  KvStore kv_;

  absl::Mutex mu_;
  std::unique_ptr<JobStore> store_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, JobRuntime> jobs_ ABSL_GUARDED_BY(mu_);
  // Pending jobs, oldest first.
  std::vector<std::string> queue_ ABSL_GUARDED_BY(mu_);
  // Workers by id; std::map keeps registration-independent, stable iteration.
  std::map<std::string, Worker> workers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> worker_order_ ABSL_GUARDED_BY(mu_);
  uint64_t id_counter_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;

  std::thread lease_thread_;
};

// The range of ranks a job runs with (both worldSize for a fixed-size job).
int MinWorkers(const v1::JobSpec& spec);
int MaxWorkers(const v1::JobSpec& spec);

// "jobs/{id}" -> "{id}"; a bare id is returned unchanged.
std::string JobIdFromName(const std::string& name);

}  // namespace gradsync::coordinator

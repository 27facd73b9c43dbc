// The worker's life: register with the coordinator (retrying with backoff), heartbeat, take
// assignments one at a time, run each generation and report its result, and come back to the
// pool. Re-registers when the coordinator forgets it: while a generation runs (the coordinator
// restarted), with a claim of the rank it runs, so the new coordinator adopts the generation and
// training goes on; it stops the generation only when the coordinator refuses the claim.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "abort_watchdog.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "fault_injection.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/core/child_process.h"
#include "gradsync/rpc/server.h"
#include "gradsync/telemetry/metrics_reporter.h"
#include "gradsync/train/activity.h"
#include "gradsync/train/train_loop.h"
#include "gradsync/v1/coordinator.grpc.pb.h"
#include "gradsync/v1/logs.grpc.pb.h"
#include "job_log_shipper.h"
#include "sample_log.h"
#include "script_runtime.h"

namespace gradsync::worker {

class WorkerMetrics;

// A script job's child as the heartbeat describes it.
struct ScriptActivity {
  pid_t pid = 0;
  absl::Time start;
  std::string command;
  // "running `python3 train.py` (pid 123) for 42s".
  std::string Describe(absl::Time now) const;
};

struct AgentOptions {
  std::string coordinator;  // host:port
  // TLS roots and the cluster token for the coordinator's channel.
  rpc::ChannelOptions coordinator_channel;
  std::string comm_host;  // address Gloo binds and advertises
  std::string name;       // prefix of the worker id
  v1::Device device;
  // gradsync-metrics' gRPC address; empty: no step reports.
  std::string metrics;
  // This worker's own Prometheus metrics; may be null.
  WorkerMetrics* own_metrics = nullptr;
  // If set, every step's sample indices are appended to a file per generation and rank here.
  std::string sample_log_dir;
  // If set, each generation's own log lines are appended to DIR/<job>/rank-<r>.log
  // (job_log_shipper.h) beside going to the coordinator.
  std::string job_log_dir;
  // Where the gradsync Python package is, for script jobs' PYTHONPATH (script_runtime.h's
  // PythonPackageDir); empty: found beside the binaries.
  std::string python_dir;
  // A drill: stall this rank at this step (heartbeats go on).
  std::optional<StallFault> stall;
  // How long an aborted generation may take to stop before the worker exits (abort_watchdog.h);
  // zero: never.
  absl::Duration abort_grace = absl::Seconds(30);
  // On SIGTERM mid-generation: how long to wait for a checkpoint at the next step boundary before
  // stopping (CheckpointBeforeStopping); zero: stop at once.
  absl::Duration stop_checkpoint_timeout = absl::Seconds(15);
  absl::Duration max_backoff = absl::Seconds(5);
};

class Agent {
 public:
  explicit Agent(AgentOptions options);
  ~Agent();

  // Runs until ShutdownRequested(); returns the process exit code.
  int Run();

 private:
  // Registers, retrying with exponential backoff until it succeeds or shutdown is requested.
  bool RegisterWithBackoff();
  // The registration's description of this worker: host, pid, name, device.
  v1::RegisterWorkerRequest Registration() const;
  // Takes on a registration's answer: worker id, session, heartbeat interval; counts it.
  void Registered(const v1::RegisterWorkerResponse& resp) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a registration made while the last assignment stream ran (an adoption) still waits for
  // its stream; otherwise the worker registers before it opens one.
  bool HasUnservedRegistration();
  // Registers again while a generation runs, the coordinator having forgotten this worker (it
  // restarted): the claim carries the rank (RegisterWorkerRequest.running) and the session held so
  // far. `seen` is the registration count when the caller learnt it was forgotten; if another
  // thread registered since, nothing is sent. True when nothing more is to be done: adopted, the
  // coordinator unreachable (the next heartbeat claims again), or registered without the rank (the
  // generation is then stopped). False when the worker must register afresh: nothing runs, or the
  // coordinator refused the claim (the caller stops the generation, ForgetRegistration).
  bool RejoinRunning(int64_t seen) ABSL_LOCKS_EXCLUDED(mu_);
  // The coordinator no longer knows this worker: stop the generation, and register again once the
  // assignment stream ends.
  void ForgetRegistration() ABSL_LOCKS_EXCLUDED(mu_);
  // Reads assignments until the stream ends; returns why it ended.
  absl::Status ServeAssignments();

  // One generation (agent_generation.cc): the heartbeat's state reset, the assignment's
  // train::TrainConfig, the replica and the training loop, and the result reported. `parsed` is whether
  // the assignment parsed (ParseAssignment); if not, the rank fails with it at once. An exception
  // from the generation fails the rank as well (job_guard.h): the worker outlives every job.
  void RunAssignment(const v1::Assignment& assignment, const absl::Status& parsed);
  void BeginGeneration(const v1::Assignment& assignment);
  absl::StatusOr<train::TrainOutcome> RunGeneration(const v1::Assignment& assignment);
  // A script job's generation instead (agent_script.cc): the ranks meet, the command runs as a
  // child with torchrun's environment, and its exit is the rank's result.
  absl::StatusOr<train::TrainOutcome> RunScript(const v1::Assignment& assignment);
  absl::StatusOr<train::TrainOutcome> RunChild(const v1::Assignment& assignment, ChildSpec child,
                                               const std::string& command_text, ScriptRuntime* runtime);
  // The child's runtime directory (script_runtime.h): its context and the worker's secrets.
  absl::StatusOr<ScriptRuntime> CreateRuntime(const v1::Assignment& assignment) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes the child's latest progress (its step, rank 0's figures) into the heartbeat and what
  // the job reached.
  void ReadScriptProgressLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The heartbeat's activity and collective counters for a script rank: its command, and what its
  // gradsync exchange is doing.
  void DescribeScriptLocked(v1::HeartbeatRequest* req) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  train::TrainHooks HooksFor(const v1::Assignment& assignment, comm::KvClient* kv, SampleLog* samples);
  // The seed of `epoch`, from the coordinator's epoch plan.
  absl::StatusOr<uint64_t> EpochSeed(const std::string& job_id, int epoch);
  void OnStepBegin(int rank, const train::StepMarker& marker);
  void EndGeneration(const v1::Assignment& assignment, const absl::StatusOr<train::TrainOutcome>& outcome);

  // The heartbeat (agent_heartbeat.cc).
  void HeartbeatLoop();
  void SendHeartbeat();
  void ReportResult(const v1::ReportResultRequest& request);
  void ReportCheckpoint(const v1::ReportCheckpointRequest& request);
  // Ships a generation's own log lines (JobLogShipper's SendLogs).
  absl::Status ReportLogs(const v1::ReportLogsRequest& request);
  // Stops the running generation: at its next step boundary, and in its collective now.
  void AbortGeneration();
  // A shutdown signal during a native generation (a preemption): asks its ranks for a checkpoint
  // at the next step boundary and waits, up to stop_checkpoint_timeout, until this worker's rank
  // has reported it or the generation has ended. A script job's child gets SIGTERM instead.
  void CheckpointBeforeStopping();
  // Where the generation is, for the watchdog; never blocks.
  std::string DescribeStuckGeneration();
  // Every call to the coordinator but the assignment stream ends after the same timeout.
  static void SetRpcDeadline(grpc::ClientContext* ctx);

  const AgentOptions options_;
  // The session the coordinator issued at the last registration; every call carries it.
  std::shared_ptr<rpc::LateHeader> session_;
  // The channel of every call to the coordinator; the assignment stream reads it directly.
  std::shared_ptr<grpc::Channel> channel_;
  std::shared_ptr<v1::CoordinatorService::Stub> stub_;
  std::unique_ptr<v1::WorkerLogService::Stub> log_stub_;
  // The running generation's log lines, from BeginGeneration to EndGeneration (the log tap).
  std::shared_ptr<JobLogShipper> job_log_;
  // Never blocks training: reports queue and go out on its own thread.
  telemetry::MetricsReporter metrics_;

  // One claim of the running rank at a time: the heartbeat and the result report may both find
  // the worker forgotten.
  absl::Mutex rejoin_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  std::string worker_id_ ABSL_GUARDED_BY(mu_);
  // Registrations so far, and the one the assignment stream was opened for.
  int64_t registrations_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t served_ ABSL_GUARDED_BY(mu_) = 0;
  // The rank the running generation holds (empty job id between generations), for a claim.
  v1::RunningRank running_ ABSL_GUARDED_BY(mu_);
  absl::Duration heartbeat_interval_ ABSL_GUARDED_BY(mu_) = absl::Seconds(1);
  // The generation being run, for heartbeats.
  v1::HeartbeatRequest current_ ABSL_GUARDED_BY(mu_);
  // Where the generation's training loop is, for the heartbeat's activity.
  train::StepMarker marker_ ABSL_GUARDED_BY(mu_);
  // What the generation has reached (train::TrainHooks::on_reached), reported with a failure.
  v1::JobResult reached_ ABSL_GUARDED_BY(mu_);
  // A script job's child while it runs (pid 0: none), for the heartbeat's activity.
  ScriptActivity script_ ABSL_GUARDED_BY(mu_);
  ScriptRuntime* script_runtime_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Whether this generation's script child started: its failure is then no setup failure.
  bool script_started_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* stream_ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  // The running generation's communicator, so an abort can interrupt a collective in flight.
  comm::Communicator* comm_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool reregister_ ABSL_GUARDED_BY(mu_) = false;

  // The state this worker kept when a generation of held_->job_id failed, for that job's next
  // generation (training.recovery "live"). Touched by the assignment thread alone: set when a step
  // fails, read by the next generation's start, dropped once a generation of the job succeeds or
  // one of another job begins.
  std::optional<train::HeldState> held_;

  std::atomic<bool> abort_{false};
  std::atomic<bool> checkpoint_requested_{false};
  // Checkpoints this worker's ranks wrote and reported, for CheckpointBeforeStopping.
  std::atomic<int64_t> checkpoints_reported_{0};
  // The job is cancelled: the ranks stop at the next step boundary, saving the weights.
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> stop_{false};
  // Ends the process when an aborted generation does not stop; reads the agent's state with
  // TryLock, so a stuck holder of mu_ cannot keep it from firing.
  AbortWatchdog watchdog_;
  std::thread heartbeat_thread_;
  std::thread shutdown_watcher_;
};

}  // namespace gradsync::worker

// The agent's part in one generation: the assignment read into a train::TrainConfig, the replica built
// (rendezvous with the other ranks), the training loop run with hooks that reach the coordinator,
// the metrics service and the sample log, and the result reported. Whatever the job does, an
// error or an exception, ends here as that rank's failure (job_guard.h).
#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent.h"
#include "gradsync/comm/kv_client.h"
#include "gradsync/core/log.h"
#include "gradsync/core/shutdown.h"
#include "gradsync/rpc/status.h"
#include "gradsync/train/replica.h"
#include "gradsync/train/train_config.h"
#include "job_guard.h"
#include "worker_metrics.h"

namespace gradsync::worker {
namespace {

// How long a rank waits at an epoch boundary for a coordinator that is away (restarting) before
// its generation fails: longer than a restarted coordinator waits for the generation's workers to
// report back (twice its lease by default), after which it restarts the generation anyway.
constexpr absl::Duration kCoordinatorAbsence = absl::Seconds(60);
constexpr absl::Duration kEpochPlanRetry = absl::Milliseconds(200);

}  // namespace

void Agent::RunAssignment(const v1::Assignment& a, const absl::Status& parsed) {
  BeginGeneration(a);
  const absl::StatusOr<train::TrainOutcome> outcome =
      parsed.ok() ? RunGuarded<train::TrainOutcome>([&] { return RunGeneration(a); })
                  : absl::StatusOr<train::TrainOutcome>(parsed);
  EndGeneration(a, outcome);
}

void Agent::BeginGeneration(const v1::Assignment& a) {
  SetLogComponent(absl::StrCat("worker r", a.rank()));
  v1::ReportLogsRequest identity;
  {
    absl::MutexLock lock(&mu_);
    identity.set_worker_id(worker_id_);
  }
  identity.set_job_id(a.job_id());
  identity.set_generation(a.generation());
  identity.set_rank(a.rank());
  const std::string file = options_.job_log_dir.empty() ? "" : JobLogFile(options_.job_log_dir, a.job_id(), a.rank());
  job_log_ =
      std::make_shared<JobLogShipper>(identity, file, [this](const v1::ReportLogsRequest& r) { return ReportLogs(r); });
  // The tap holds the shipper: a line logged while the tap is being replaced still finds it.
  SetLogTap([log = job_log_](const LogRecord& r) { log->Add(r); });
  SetLogContext(a.job_id(), a.rank());
  GS_LOG(INFO) << "assigned rank " << a.rank() << "/" << a.world_size() << " of job " << a.job_id() << " generation "
               << a.generation();
  abort_ = false;
  if (held_.has_value() && held_->job_id != a.job_id()) held_.reset();
  watchdog_.GenerationStarted();
  checkpoint_requested_ = false;
  stop_requested_ = false;
  absl::MutexLock lock(&mu_);
  reached_.Clear();
  script_started_ = false;
  current_.set_job_id(a.job_id());
  current_.set_generation(a.generation());
  current_.set_rank(a.rank());
  current_.set_step(0);
  current_.clear_progress();
  marker_ = train::StepMarker();
  running_.set_job_id(a.job_id());
  running_.set_generation(a.generation());
  running_.set_rank(a.rank());
  running_.set_world_size(a.world_size());
  running_.set_worker_id(worker_id_);
}

absl::StatusOr<train::TrainOutcome> Agent::RunGeneration(const v1::Assignment& a) {
  if (a.spec().has_script()) return RunScript(a);
  const absl::StatusOr<train::TrainConfig> config = train::TrainConfigFromAssignment(a);
  if (!config.ok()) return config.status();
  auto kv = comm::NewCoordinatorKvClient(stub_, a.job_id(), a.generation());
  const train::ReplicaOptions ro{options_.device, kv.get(), options_.comm_host};
  const absl::Time rendezvous_start = absl::Now();
  absl::StatusOr<std::unique_ptr<train::Replica>> replica = train::CreateReplica(*config, ro);
  if (!replica.ok()) return replica.status();
  if (options_.own_metrics != nullptr) {
    options_.own_metrics->RecordRendezvous(a.job_id(), a.rank(), absl::ToDoubleSeconds(absl::Now() - rendezvous_start));
  }
  GS_LOG(INFO) << "rank " << a.rank() << " computes on " << (*replica)->Describe();
  std::unique_ptr<SampleLog> samples;
  if (!options_.sample_log_dir.empty()) {
    auto log = SampleLog::Open(options_.sample_log_dir, a.job_id(), a.generation(), a.rank());
    if (log.ok()) {
      samples = *std::move(log);
    } else {
      GS_LOG(WARNING) << log.status();
    }
  }
  {
    absl::MutexLock lock(&mu_);
    comm_ = &(*replica)->comm();
  }
  // Forgotten before the replica goes, however the generation ends: the heartbeat reads it.
  absl::Cleanup forget_comm = [this] {
    absl::MutexLock lock(&mu_);
    comm_ = nullptr;
  };
  return Train(*config, **replica, HooksFor(a, kv.get(), samples.get()), &held_);
}

train::TrainHooks Agent::HooksFor(const v1::Assignment& a, comm::KvClient* kv, SampleLog* samples) {
  const std::string job_id = a.job_id();
  const int generation = a.generation(), rank = a.rank();
  train::TrainHooks hooks;
  hooks.abort = &abort_;
  hooks.kv = kv;
  hooks.checkpoint_requested = &checkpoint_requested_;
  hooks.stop = &stop_requested_;
  hooks.on_reached = [this](const v1::JobResult& r) {
    absl::MutexLock lock(&mu_);
    reached_ = r;
  };
  hooks.on_checkpoint = [this](const v1::ReportCheckpointRequest& r) {
    ReportCheckpoint(r);
    ++checkpoints_reported_;
  };
  hooks.epoch_seed = [this, job_id](int epoch) { return EpochSeed(job_id, epoch); };
  hooks.on_step = [this, job_id, generation](const v1::StepReport& r) {
    v1::StepReport report = r;
    report.set_job_id(job_id);
    report.set_generation(generation);
    if (options_.own_metrics != nullptr) options_.own_metrics->RecordStep(report);
    metrics_.Report(std::move(report));
  };
  hooks.on_progress = [this](const v1::JobProgress& p) {
    absl::MutexLock lock(&mu_);
    *current_.mutable_progress() = p;
  };
  hooks.on_step_begin = [this, rank](const train::StepMarker& m) { OnStepBegin(rank, m); };
  hooks.held = held_.has_value() ? &*held_ : nullptr;
  if (samples != nullptr) {
    hooks.on_samples = [samples](int64_t step, const ddp::Position& from, const ddp::StepShard& shard) {
      samples->Write(step, from, shard);
    };
  }
  return hooks;
}

absl::StatusOr<uint64_t> Agent::EpochSeed(const std::string& job_id, int epoch) {
  v1::EpochPlanRequest req;
  req.set_job_id(job_id);
  req.set_epoch(epoch);
  const absl::Time give_up = absl::Now() + kCoordinatorAbsence;
  for (int attempt = 1;; ++attempt) {
    v1::EpochPlan plan;
    grpc::ClientContext ctx;
    SetRpcDeadline(&ctx);
    absl::Status s = rpc::FromGrpc(stub_->GetEpochPlan(&ctx, req, &plan));
    if (s.ok()) return plan.seed();
    // The coordinator is away, or restarted and knows this worker's session only once the heartbeat
    // has claimed the rank back: the rank waits at the epoch boundary meanwhile.
    const bool away = absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) || absl::IsUnauthenticated(s);
    if (!away || abort_.load() || absl::Now() >= give_up || ShutdownRequested()) return s;
    if (attempt == 1) {
      GS_LOG(WARNING) << "epoch " << epoch << "'s plan: " << s << "; waiting for the coordinator";
    }
    absl::SleepFor(kEpochPlanRetry);
  }
}

// Where the heartbeat says the rank is; and the stall drill, which sleeps here.
void Agent::OnStepBegin(int rank, const train::StepMarker& m) {
  watchdog_.StepBegan();
  {
    absl::MutexLock lock(&mu_);
    marker_ = m;
    current_.set_step(m.step - 1);
  }
  if (options_.stall && options_.stall->rank == rank && options_.stall->step == m.step) {
    GS_LOG(WARNING) << "injected fault: stalling step " << m.step << " for "
                    << absl::FormatDuration(options_.stall->duration);
    absl::SleepFor(options_.stall->duration);
  }
}

void Agent::EndGeneration(const v1::Assignment& a, const absl::StatusOr<train::TrainOutcome>& outcome) {
  watchdog_.GenerationEnded();
  const bool stopped_by_shutdown = !outcome.ok() && ShutdownRequested();
  v1::ReportResultRequest report;
  report.set_job_id(a.job_id());
  report.set_generation(a.generation());
  report.set_rank(a.rank());
  if (outcome.ok()) {
    report.set_param_digest(outcome->param_digest);
    *report.mutable_result() = outcome->result;
    GS_LOG(INFO) << "finished: " << outcome->result.global_step() << " steps, digest " << outcome->param_digest;
    held_.reset();
  } else {
    bool during_setup;
    {
      absl::MutexLock lock(&mu_);
      // A generation resuming live follows one whose ranks set the job up; one that fails before
      // its first step lost a peer (in the transfer, say) more likely than it met the job's fault.
      during_setup = marker_.step == 0 && !script_started_ && !a.has_live_from();
      // What the job reached before the failure, for the summary of a job that fails.
      *report.mutable_result() = reached_;
    }
    report.set_error(outcome.status().ToString());
    if (held_.has_value() && held_->job_id == a.job_id()) {
      report.mutable_held()->set_generation(held_->generation);
      report.mutable_held()->set_step(held_->at.step);
    }
    report.set_during_setup(during_setup);
    if (stopped_by_shutdown) {
      GS_LOG(WARNING) << "generation stopped by this worker's shutdown: " << outcome.status();
    } else {
      GS_LOG(ERROR) << "generation failed" << (during_setup ? " during setup: " : ": ") << outcome.status();
    }
  }
  // The generation's lines, its result among them, reach the coordinator while the generation still
  // runs there: once every rank has reported, it takes no more.
  SetLogTap(nullptr);
  job_log_->Stop(absl::Seconds(2));
  job_log_.reset();
  // Stopped by this worker's own shutdown (a preemption; CheckpointBeforeStopping saved what it
  // could): not the job's failure. The coordinator learns of it from the lease, or is stopping too
  // and resumes the job from the checkpoint uncounted; a report would restart the job at once,
  // counted, perhaps on this very worker.
  if (stopped_by_shutdown) {
    GS_LOG(INFO) << "not reported as a failure: the worker is stopping";
  } else {
    ReportResult(report);
  }
  if (absl::Status s = metrics_.Flush(absl::Seconds(2)); !s.ok() && metrics_.enabled()) {
    GS_LOG(WARNING) << "step reports not all delivered to the metrics service: " << s;
  }
  {
    absl::MutexLock lock(&mu_);
    current_.Clear();
    running_.Clear();
  }
  SetLogComponent("worker");
  ClearLogContext();
}

}  // namespace gradsync::worker

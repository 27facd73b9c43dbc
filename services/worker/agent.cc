#include "agent.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/comm/kv_client.h"
#include "gradsync/core/env.h"
#include "gradsync/core/log.h"
#include "gradsync/core/shutdown.h"
#include "gradsync/rpc/server.h"
#include "gradsync/rpc/status.h"
#include "replica.h"
#include "sample_log.h"
#include "trainer.h"
#include "worker_metrics.h"

namespace gradsync::worker {
namespace {

constexpr absl::Duration kRpcTimeout = absl::Seconds(10);
constexpr int kReportAttempts = 5;

void SetDeadline(grpc::ClientContext* ctx, absl::Duration d) {
  ctx->set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(d));
}

}  // namespace

Agent::Agent(AgentOptions options)
    : options_(std::move(options)),
      stub_(v1::CoordinatorService::NewStub(rpc::MakeChannel(options_.coordinator, options_.coordinator_channel))),
      metrics_({.address = options_.metrics}) {}

Agent::~Agent() {
  stop_ = true;
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  if (shutdown_watcher_.joinable()) shutdown_watcher_.join();
}

bool Agent::RegisterWithBackoff() {
  absl::Duration backoff = absl::Milliseconds(200);
  for (int attempt = 1; !ShutdownRequested(); ++attempt) {
    v1::RegisterWorkerRequest req;
    req.set_hostname(HostName());
    req.set_pid(static_cast<int>(::getpid()));
    req.set_name(options_.name);
    *req.mutable_device() = options_.device;
    v1::RegisterWorkerResponse resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx, kRpcTimeout);
    grpc::Status s = stub_->RegisterWorker(&ctx, req, &resp);
    if (s.ok()) {
      absl::MutexLock lock(&mu_);
      worker_id_ = resp.worker_id();
      heartbeat_interval_ = absl::Milliseconds(std::max<int64_t>(50, resp.heartbeat_interval_ms()));
      reregister_ = false;
      GS_LOG(INFO) << "registered with " << options_.coordinator << " as " << worker_id_ << " ("
                   << options_.device.description() << ")";
      return true;
    }
    GS_LOG(WARNING) << "cannot register with coordinator at " << options_.coordinator << " (attempt "
                    << attempt << "): " << rpc::FromGrpc(s) << "; retrying in "
                    << absl::FormatDuration(backoff);
    WaitForShutdown(backoff);
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
  return false;
}

int Agent::Run() {
  heartbeat_thread_ = std::thread([this] { HeartbeatLoop(); });
  // Wakes a blocked assignment stream when a signal asks us to stop.
  shutdown_watcher_ = std::thread([this] {
    while (!stop_ && !WaitForShutdown(absl::Milliseconds(200))) {
    }
    AbortGeneration();
    absl::MutexLock lock(&mu_);
    if (stream_ctx_ != nullptr) stream_ctx_->TryCancel();
  });
  while (!ShutdownRequested()) {
    if (!RegisterWithBackoff()) break;
    absl::Status s = ServeAssignments();
    if (ShutdownRequested()) break;
    GS_LOG(WARNING) << "assignment stream ended: " << s << "; reconnecting";
    WaitForShutdown(absl::Milliseconds(500));
  }
  GS_LOG(INFO) << "shutting down";
  stop_ = true;
  return 0;
}

absl::Status Agent::ServeAssignments() {
  grpc::ClientContext ctx;
  v1::WatchAssignmentsRequest req;
  {
    absl::MutexLock lock(&mu_);
    req.set_worker_id(worker_id_);
    stream_ctx_ = &ctx;
  }
  auto reader = stub_->WatchAssignments(&ctx, req);
  v1::Assignment assignment;
  while (reader->Read(&assignment)) {
    RunAssignment(assignment);
    if (ShutdownRequested()) break;
  }
  {
    absl::MutexLock lock(&mu_);
    stream_ctx_ = nullptr;
  }
  return rpc::FromGrpc(reader->Finish());
}

void Agent::RunAssignment(const v1::Assignment& a) {
  SetLogComponent(absl::StrCat("worker r", a.rank()));
  GS_LOG(INFO) << "assigned rank " << a.rank() << "/" << a.world_size() << " of job " << a.job_id()
               << " generation " << a.generation();
  abort_ = false;
  checkpoint_requested_ = false;
  {
    absl::MutexLock lock(&mu_);
    current_.set_job_id(a.job_id());
    current_.set_generation(a.generation());
    current_.set_rank(a.rank());
    current_.set_step(0);
    current_.clear_progress();
    marker_ = StepMarker();
  }

  auto kv = comm::NewCoordinatorKvClient(stub_, a.job_id(), a.generation());
  ReplicaOptions ro;
  ro.device = options_.device;
  ro.kv = kv.get();
  ro.gloo.hostname = options_.comm_host;
  ro.gloo.timeout = absl::Seconds(a.spec().ddp().timeout_seconds());
  ro.gloo.shared_memory = a.spec().ddp().transport() != "tcp";
  absl::StatusOr<TrainOutcome> outcome;
  const absl::Time rendezvous_start = absl::Now();
  auto replica = CreateReplica(a, ro);
  if (replica.ok() && options_.own_metrics != nullptr) {
    options_.own_metrics->RecordRendezvous(a.job_id(), a.rank(), absl::ToDoubleSeconds(absl::Now() - rendezvous_start));
  }
  if (!replica.ok()) {
    outcome = replica.status();
  } else {
    GS_LOG(INFO) << "rank " << a.rank() << " computes on " << (*replica)->Describe();
    {
      absl::MutexLock lock(&mu_);
      comm_ = &(*replica)->comm();
    }
    TrainHooks hooks;
    hooks.abort = &abort_;
    hooks.kv = kv.get();
    hooks.checkpoint_requested = &checkpoint_requested_;
    hooks.on_checkpoint = [&](const v1::ReportCheckpointRequest& r) { ReportCheckpoint(r); };
    hooks.epoch_seed = [&](int epoch) -> absl::StatusOr<uint64_t> {
      v1::EpochPlanRequest req;
      req.set_job_id(a.job_id());
      req.set_epoch(epoch);
      v1::EpochPlan plan;
      grpc::ClientContext ctx;
      SetDeadline(&ctx, kRpcTimeout);
      absl::Status s = rpc::FromGrpc(stub_->GetEpochPlan(&ctx, req, &plan));
      if (!s.ok()) return s;
      return plan.seed();
    };
    hooks.on_step = [&](const v1::StepReport& r) {
      v1::StepReport report = r;
      report.set_job_id(a.job_id());
      report.set_generation(a.generation());
      if (options_.own_metrics != nullptr) options_.own_metrics->RecordStep(report);
      metrics_.Report(std::move(report));
    };
    hooks.on_progress = [&](const v1::JobProgress& p) {
      absl::MutexLock lock(&mu_);
      *current_.mutable_progress() = p;
    };
    hooks.on_step_begin = [&](const StepMarker& m) {
      {
        absl::MutexLock lock(&mu_);
        marker_ = m;
        current_.set_step(m.step - 1);
      }
      if (options_.stall && options_.stall->rank == a.rank() && options_.stall->step == m.step) {
        GS_LOG(WARNING) << "injected fault: stalling step " << m.step << " for "
                        << absl::FormatDuration(options_.stall->duration);
        absl::SleepFor(options_.stall->duration);
      }
    };
    std::unique_ptr<SampleLog> samples;
    if (!options_.sample_log_dir.empty()) {
      auto log = SampleLog::Open(options_.sample_log_dir, a.job_id(), a.generation(), a.rank());
      if (log.ok()) {
        samples = *std::move(log);
        hooks.on_samples = [&](int64_t step, const ddp::Position& from, const ddp::StepShard& shard) {
          samples->Write(step, from, shard);
        };
      } else {
        GS_LOG(WARNING) << log.status();
      }
    }
    outcome = Train(a, **replica, hooks);
    absl::MutexLock lock(&mu_);
    comm_ = nullptr;
  }

  v1::ReportResultRequest report;
  report.set_job_id(a.job_id());
  report.set_generation(a.generation());
  report.set_rank(a.rank());
  if (outcome.ok()) {
    report.set_param_digest(outcome->param_digest);
    *report.mutable_result() = outcome->result;
    GS_LOG(INFO) << "finished: " << outcome->result.global_step() << " steps, digest "
                 << outcome->param_digest;
  } else {
    report.set_error(outcome.status().ToString());
    GS_LOG(ERROR) << "generation failed: " << outcome.status();
  }
  ReportResult(report);
  if (absl::Status s = metrics_.Flush(absl::Seconds(2)); !s.ok() && metrics_.enabled()) {
    GS_LOG(WARNING) << "step reports not all delivered to the metrics service: " << s;
  }
  {
    absl::MutexLock lock(&mu_);
    current_.Clear();
  }
  SetLogComponent("worker");
}

void Agent::ReportResult(const v1::ReportResultRequest& request) {
  for (int attempt = 1; attempt <= kReportAttempts; ++attempt) {
    v1::ReportResultRequest req = request;
    {
      absl::MutexLock lock(&mu_);
      req.set_worker_id(worker_id_);
    }
    v1::ReportResultResponse resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx, kRpcTimeout);
    grpc::Status s = stub_->ReportResult(&ctx, req, &resp);
    if (s.ok()) return;
    GS_LOG(WARNING) << "reporting the result failed (attempt " << attempt << "): " << rpc::FromGrpc(s);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) return;
    WaitForShutdown(absl::Seconds(attempt));
  }
}

void Agent::AbortGeneration() {
  abort_ = true;
  absl::MutexLock lock(&mu_);
  if (comm_ != nullptr) comm_->Abort();
}

void Agent::ReportCheckpoint(const v1::ReportCheckpointRequest& request) {
  v1::ReportCheckpointRequest req = request;
  {
    absl::MutexLock lock(&mu_);
    req.set_worker_id(worker_id_);
  }
  v1::ReportCheckpointResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, kRpcTimeout);
  // A lost report only leaves the checkpoint uncommitted; training goes on either way.
  if (grpc::Status s = stub_->ReportCheckpoint(&ctx, req, &resp); !s.ok()) {
    GS_LOG(WARNING) << "reporting the checkpoint at step " << req.step() << " failed: " << rpc::FromGrpc(s);
  } else if (resp.committed()) {
    GS_LOG(INFO) << "checkpoint at step " << req.step() << " committed";
  }
}

void Agent::HeartbeatLoop() {
  while (!stop_) {
    absl::Duration interval;
    {
      absl::MutexLock lock(&mu_);
      interval = heartbeat_interval_;
    }
    SendHeartbeat();
    absl::SleepFor(interval);
  }
}

void Agent::SendHeartbeat() {
  v1::HeartbeatRequest req;
  {
    absl::MutexLock lock(&mu_);
    if (worker_id_.empty() || reregister_) return;
    req = current_;
    req.set_worker_id(worker_id_);
    if (comm_ != nullptr) {
      const int64_t issued = comm_->sequence(), done = comm_->completed();
      req.set_collective_seq(issued);
      req.set_collective_done(done);
      req.set_activity(DescribeActivity(marker_, issued, done));
    }
  }
  v1::HeartbeatResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, kRpcTimeout);
  grpc::Status s = stub_->Heartbeat(&ctx, req, &resp);
  if (!s.ok()) {
    GS_LOG(WARNING) << "heartbeat failed: " << rpc::FromGrpc(s);
    return;
  }
  if (resp.checkpoint_requested()) checkpoint_requested_ = true;
  switch (resp.action()) {
    case v1::HeartbeatResponse::ABORT:
      if (!abort_.load()) {
        GS_LOG(WARNING) << "coordinator aborts the generation: " << resp.reason();
      }
      AbortGeneration();
      break;
    case v1::HeartbeatResponse::REREGISTER: {
      GS_LOG(WARNING) << "coordinator asks to register again: " << resp.reason();
      AbortGeneration();
      absl::MutexLock lock(&mu_);
      reregister_ = true;
      if (stream_ctx_ != nullptr) stream_ctx_->TryCancel();
      break;
    }
    default:
      break;
  }
}

}  // namespace gradsync::worker

#include "agent.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "assignment_stream.h"
#include "gradsync/core/env.h"
#include "gradsync/core/log.h"
#include "gradsync/core/shutdown.h"
#include "gradsync/rpc/server.h"
#include "gradsync/rpc/status.h"

namespace gradsync::worker {
namespace {

constexpr absl::Duration kRpcTimeout = absl::Seconds(10);
constexpr int kReportAttempts = 5;

std::shared_ptr<grpc::Channel> CoordinatorChannel(const AgentOptions& options,
                                                  std::shared_ptr<rpc::LateHeader> session) {
  rpc::ChannelOptions channel = options.coordinator_channel;
  channel.late_header = std::move(session);
  return rpc::MakeChannel(options.coordinator, channel);
}

}  // namespace

void Agent::SetRpcDeadline(grpc::ClientContext* ctx) {
  ctx->set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(kRpcTimeout));
}

Agent::Agent(AgentOptions options)
    : options_(std::move(options)),
      session_(std::make_shared<rpc::LateHeader>(rpc::kWorkerSessionMetadata)),
      channel_(CoordinatorChannel(options_, session_)),
      stub_(v1::CoordinatorService::NewStub(channel_)),
      log_stub_(v1::WorkerLogService::NewStub(channel_)),
      // The metrics service takes step reports from holders of the cluster token alone.
      metrics_({.address = options_.metrics, .bearer_token = options_.coordinator_channel.bearer_token}),
      watchdog_(options_.abort_grace, [this] { return DescribeStuckGeneration(); }) {}

Agent::~Agent() {
  stop_ = true;
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  if (shutdown_watcher_.joinable()) shutdown_watcher_.join();
}

v1::RegisterWorkerRequest Agent::Registration() const {
  v1::RegisterWorkerRequest req;
  req.set_hostname(HostName());
  req.set_pid(static_cast<int>(::getpid()));
  req.set_name(options_.name);
  *req.mutable_device() = options_.device;
  return req;
}

void Agent::Registered(const v1::RegisterWorkerResponse& resp) {
  worker_id_ = resp.worker_id();
  session_->Set(resp.session_token());
  heartbeat_interval_ = absl::Milliseconds(std::max<int64_t>(50, resp.heartbeat_interval_ms()));
  reregister_ = false;
  ++registrations_;
}

bool Agent::HasUnservedRegistration() {
  absl::MutexLock lock(&mu_);
  return registrations_ > served_ && !reregister_;
}

bool Agent::RegisterWithBackoff() {
  absl::Duration backoff = absl::Milliseconds(200);
  for (int attempt = 1; !ShutdownRequested(); ++attempt) {
    const v1::RegisterWorkerRequest req = Registration();
    v1::RegisterWorkerResponse resp;
    grpc::ClientContext ctx;
    SetRpcDeadline(&ctx);
    grpc::Status s = stub_->RegisterWorker(&ctx, req, &resp);
    if (s.ok()) {
      absl::MutexLock lock(&mu_);
      Registered(resp);
      GS_LOG(INFO) << "registered with " << options_.coordinator << " as " << worker_id_ << " ("
                   << options_.device.description() << ")";
      return true;
    }
    GS_LOG(WARNING) << "cannot register with coordinator at " << options_.coordinator << " (attempt " << attempt
                    << "): " << rpc::FromGrpc(s) << "; retrying in " << absl::FormatDuration(backoff);
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
    if (!stop_) CheckpointBeforeStopping();
    AbortGeneration();
    absl::MutexLock lock(&mu_);
    if (stream_ctx_ != nullptr) stream_ctx_->TryCancel();
  });
  while (!ShutdownRequested()) {
    // An adoption registered the worker while its generation ran: that registration's stream.
    if (!HasUnservedRegistration() && !RegisterWithBackoff()) break;
    absl::Status s = ServeAssignments();
    if (ShutdownRequested()) break;
    GS_LOG(WARNING) << "assignment stream ended: " << s << "; reconnecting";
    WaitForShutdown(absl::Milliseconds(500));
  }
  GS_LOG(INFO) << "shutting down";
  stop_ = true;
  return 0;
}

void Agent::CheckpointBeforeStopping() {
  const absl::Duration timeout = options_.stop_checkpoint_timeout;
  auto training = [this] {
    absl::MutexLock lock(&mu_);
    return comm_ != nullptr;
  };
  if (timeout <= absl::ZeroDuration() || !training()) return;
  const int64_t before = checkpoints_reported_.load();
  checkpoint_requested_ = true;
  GS_LOG(INFO) << "stopping: checkpointing at the next step boundary first (up to " << absl::FormatDuration(timeout)
               << ")";
  const absl::Time deadline = absl::Now() + timeout;
  while (checkpoints_reported_.load() == before && training() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  if (checkpoints_reported_.load() > before) {
    GS_LOG(INFO) << "stopping: the checkpoint is written and reported";
  } else if (training()) {
    GS_LOG(WARNING) << "stopping without a checkpoint: none was written within " << absl::FormatDuration(timeout);
  }
}

absl::Status Agent::ServeAssignments() {
  grpc::ClientContext ctx;
  v1::WatchAssignmentsRequest req;
  {
    absl::MutexLock lock(&mu_);
    req.set_worker_id(worker_id_);
    served_ = registrations_;
    stream_ctx_ = &ctx;
  }
  // Read as bytes: an assignment that does not parse fails its rank, not the stream.
  auto reader = WatchAssignmentBytes(channel_.get(), &ctx, req);
  grpc::ByteBuffer bytes;
  while (reader->Read(&bytes)) {
    v1::Assignment assignment;
    const absl::Status parsed = ParseAssignment(bytes, &assignment);
    RunAssignment(assignment, parsed);
    if (ShutdownRequested()) break;
  }
  {
    absl::MutexLock lock(&mu_);
    stream_ctx_ = nullptr;
  }
  return rpc::FromGrpc(reader->Finish());
}

void Agent::ReportResult(const v1::ReportResultRequest& request) {
  for (int attempt = 1; attempt <= kReportAttempts; ++attempt) {
    v1::ReportResultRequest req = request;
    int64_t seen;
    {
      absl::MutexLock lock(&mu_);
      req.set_worker_id(worker_id_);
      seen = registrations_;
    }
    v1::ReportResultResponse resp;
    grpc::ClientContext ctx;
    SetRpcDeadline(&ctx);
    grpc::Status s = stub_->ReportResult(&ctx, req, &resp);
    if (s.ok()) return;
    if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      // The generation ended without this rank (aborted, restarted): nothing to report to.
      GS_LOG(INFO) << "result not taken: " << rpc::FromGrpc(s);
      return;
    }
    GS_LOG(WARNING) << "reporting the result failed (attempt " << attempt << "): " << rpc::FromGrpc(s);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
      // The coordinator restarted and forgot this worker: the rank goes back to it, then the report.
      if (!RejoinRunning(seen)) return;
      continue;
    }
    WaitForShutdown(absl::Seconds(attempt));
  }
}

void Agent::ReportCheckpoint(const v1::ReportCheckpointRequest& request) {
  v1::ReportCheckpointRequest req = request;
  {
    absl::MutexLock lock(&mu_);
    req.set_worker_id(worker_id_);
  }
  v1::ReportCheckpointResponse resp;
  grpc::ClientContext ctx;
  SetRpcDeadline(&ctx);
  // A lost report only leaves the checkpoint uncommitted; training goes on either way.
  if (grpc::Status s = stub_->ReportCheckpoint(&ctx, req, &resp); !s.ok()) {
    GS_LOG(WARNING) << "reporting the checkpoint at step " << req.step() << " failed: " << rpc::FromGrpc(s);
  } else if (resp.committed()) {
    GS_LOG(INFO) << "checkpoint at step " << req.step() << " committed";
  }
}

absl::Status Agent::ReportLogs(const v1::ReportLogsRequest& request) {
  v1::ReportLogsResponse resp;
  grpc::ClientContext ctx;
  // Short: a batch that fails is tried again with the next one, and Stop waits for the last.
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return rpc::FromGrpc(log_stub_->ReportLogs(&ctx, request, &resp));
}

}  // namespace gradsync::worker

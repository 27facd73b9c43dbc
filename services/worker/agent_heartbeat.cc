// The agent's heartbeat: every interval the coordinator hears where the rank is (the step, the
// collectives issued and finished, its activity, rank 0's progress) and may answer with a
// checkpoint request, an abort, or a request to register again.
#include "absl/time/clock.h"
#include "agent.h"
#include "gradsync/core/log.h"
#include "gradsync/rpc/status.h"

namespace gradsync::worker {

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
  SetRpcDeadline(&ctx);
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
    default: break;
  }
}

void Agent::AbortGeneration() {
  abort_ = true;
  absl::MutexLock lock(&mu_);
  if (comm_ != nullptr) comm_->Abort();
}

}  // namespace gradsync::worker

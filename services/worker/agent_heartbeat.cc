// The agent's heartbeat: every interval the coordinator hears where the rank is (the step, the
// collectives issued and finished, its activity, rank 0's progress) and may answer with a
// checkpoint request, a stop at the next step boundary (a cancel), an abort, or a request to
// register again. A worker asked to register again
// while its generation runs claims its rank back from the coordinator, which restarted; it goes on
// training unless the claim is refused.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent.h"
#include "gradsync/core/log.h"
#include "gradsync/rpc/status.h"

namespace gradsync::worker {

std::string ScriptActivity::Describe(absl::Time now) const {
  // The command's start is what tells ranks apart in a diagnosis; its long arguments are not.
  constexpr size_t kShown = 60;
  const std::string shown = command.size() <= kShown ? command : command.substr(0, kShown) + "...";
  return absl::StrCat("running `", shown, "` (pid ", pid, ") for ",
                      absl::FormatDuration(absl::Trunc(now - start, absl::Seconds(1))));
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
  int64_t seen;
  {
    absl::MutexLock lock(&mu_);
    if (worker_id_.empty() || reregister_) return;
    seen = registrations_;
    ReadScriptProgressLocked();
    req = current_;
    req.set_worker_id(worker_id_);
    if (comm_ != nullptr) {
      const int64_t issued = comm_->sequence(), done = comm_->completed();
      req.set_collective_seq(issued);
      req.set_collective_done(done);
      req.set_activity(DescribeActivity(marker_, issued, done));
    } else if (script_.pid > 0) {
      DescribeScriptLocked(&req);
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
    case v1::HeartbeatResponse::STOP:
      if (!stop_requested_.exchange(true)) {
        GS_LOG(WARNING) << "coordinator stops the generation at the next step boundary: " << resp.reason();
      }
      break;
    case v1::HeartbeatResponse::REREGISTER:
      GS_LOG(WARNING) << "coordinator asks to register again: " << resp.reason();
      if (!RejoinRunning(seen)) ForgetRegistration();
      break;
    default: break;
  }
}

void Agent::DescribeScriptLocked(v1::HeartbeatRequest* req) {
  std::string activity = script_.Describe(absl::Now());
  const std::optional<ScriptRuntime::ExchangeCounters> c =
      script_runtime_ != nullptr ? script_runtime_->ReadExchangeCounters() : std::nullopt;
  if (c.has_value()) {
    req->set_collective_seq(c->issued);
    req->set_collective_done(c->finished);
    absl::StrAppend(&activity, c->issued > c->finished
                                   ? absl::StrCat(": waiting in collective #", c->finished, " of its gradsync exchange")
                                   : absl::StrCat(": between collectives (", c->finished, " finished)"));
  }
  req->set_activity(activity);
}

void Agent::ForgetRegistration() {
  AbortGeneration();
  absl::MutexLock lock(&mu_);
  reregister_ = true;
  if (stream_ctx_ != nullptr) stream_ctx_->TryCancel();
}

bool Agent::RejoinRunning(int64_t seen) {
  absl::MutexLock serial(&rejoin_mu_);
  v1::RegisterWorkerRequest req = Registration();
  {
    absl::MutexLock lock(&mu_);
    // Registered by another thread since the caller was told: that registration stands.
    if (registrations_ != seen) return !reregister_;
    if (running_.job_id().empty()) return false;
    *req.mutable_running() = running_;
  }
  v1::RegisterWorkerResponse resp;
  grpc::ClientContext ctx;
  SetRpcDeadline(&ctx);
  // The call carries the session held so far: the coordinator's proof that the rank is this worker's.
  const absl::Status s = rpc::FromGrpc(stub_->RegisterWorker(&ctx, req, &resp));
  if (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) {
    GS_LOG(WARNING) << "cannot claim rank " << req.running().rank() << " back yet: " << s;
    return true;
  }
  absl::MutexLock lock(&mu_);
  if (!s.ok()) {
    GS_LOG(WARNING) << "coordinator refuses rank " << req.running().rank() << " of job " << req.running().job_id()
                    << " back, stopping the generation: " << s;
    running_.Clear();
    return false;
  }
  Registered(resp);
  // The stream, if any, was opened for the forgotten registration: the next one serves this one.
  if (stream_ctx_ != nullptr) stream_ctx_->TryCancel();
  if (!resp.adopted()) {
    GS_LOG(WARNING) << "coordinator registered this worker as " << worker_id_ << " without its rank: stopping job "
                    << req.running().job_id() << " generation " << req.running().generation();
    running_.Clear();
    abort_ = true;
    watchdog_.AbortRequested();
    if (comm_ != nullptr) comm_->Abort();
    return true;
  }
  GS_LOG(INFO) << "coordinator took rank " << req.running().rank() << " of job " << req.running().job_id()
               << " generation " << req.running().generation() << " back as worker " << worker_id_
               << ": training goes on";
  return true;
}

void Agent::AbortGeneration() {
  abort_ = true;
  watchdog_.AbortRequested();
  absl::MutexLock lock(&mu_);
  if (comm_ != nullptr) comm_->Abort();
}

std::string Agent::DescribeStuckGeneration() {
  if (!mu_.TryLock()) return "the agent's state is locked (a thread holding it is stuck)";
  std::string where =
      absl::StrCat("job ", current_.job_id(), " generation ", current_.generation(), " rank ", current_.rank(), ", ");
  if (script_.pid > 0) {
    absl::StrAppend(&where, script_.Describe(absl::Now()));
  } else if (comm_ == nullptr) {
    absl::StrAppend(&where, "its communicator already gone (stuck tearing the replica down or after)");
  } else {
    absl::StrAppend(&where, DescribeActivity(marker_, comm_->sequence(), comm_->completed()));
  }
  mu_.Unlock();
  return where;
}

}  // namespace gradsync::worker

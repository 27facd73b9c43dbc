// The worker-facing half of the coordinator: membership, leases, assignments and results.
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator.h"
#include "gradsync/core/log.h"
#include "gradsync/ddp/sampler.h"

namespace gradsync::coordinator {

v1::RegisterWorkerResponse Coordinator::RegisterWorker(const v1::RegisterWorkerRequest& request) {
  absl::MutexLock lock(&mu_);
  std::string id;
  do {
    id = NewIdLocked(request.name().empty() ? "worker" : request.name());
  } while (workers_.count(id) > 0);
  Worker& w = workers_[id];
  w.id = id;
  w.info = request;
  w.last_seen = options_.clock();
  worker_order_.push_back(id);
  GS_LOG(INFO) << "worker " << id << " registered from " << request.hostname() << " pid "
               << request.pid() << " device " << request.device().description();
  ScheduleLocked();
  v1::RegisterWorkerResponse resp;
  resp.set_worker_id(id);
  resp.set_heartbeat_interval_ms(absl::ToInt64Milliseconds(options_.heartbeat_interval));
  resp.set_lease_timeout_ms(absl::ToInt64Milliseconds(options_.lease_timeout));
  return resp;
}

v1::HeartbeatResponse Coordinator::Heartbeat(const v1::HeartbeatRequest& request) {
  v1::HeartbeatResponse resp;
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(request.worker_id());
  if (it == workers_.end()) {
    resp.set_action(v1::HeartbeatResponse::REREGISTER);
    resp.set_reason(absl::StrCat("unknown worker ", request.worker_id()));
    return resp;
  }
  Worker& w = it->second;
  w.last_seen = options_.clock();
  resp.set_action(v1::HeartbeatResponse::CONTINUE);
  if (w.state != WorkerState::kAssigned) return resp;

  JobRuntime* rt = FindJobLocked(w.job_id);
  const bool active = rt != nullptr && rt->generation_active && rt->job.generation() == w.generation;
  if (!active) {
    // The worker's generation is over. A worker that reports no job has already stopped.
    if (request.job_id().empty()) {
      FreeWorkerLocked(&w);
      ScheduleLocked();
    } else {
      resp.set_action(v1::HeartbeatResponse::ABORT);
      resp.set_reason(w.abort_reason.empty() ? "generation ended" : w.abort_reason);
    }
    return resp;
  }
  resp.set_checkpoint_requested(rt->checkpoint_requested);
  if (request.job_id() == w.job_id && request.generation() == w.generation) {
    v1::HeartbeatRequest beat = request;
    beat.set_rank(w.rank);
    beat.clear_progress();
    RecordBeatLocked(rt, beat);
    if (request.has_progress() && w.rank == 0) {
      *rt->job.mutable_progress() = request.progress();
      TouchLocked(rt);
    }
  }
  return resp;
}

absl::StatusOr<std::optional<v1::Assignment>> Coordinator::NextAssignment(const std::string& worker_id,
                                                                          absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    auto it = workers_.find(worker_id);
    return shutdown_ || it == workers_.end() || !it->second.inbox.empty();
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  if (shutdown_) return absl::UnavailableError("coordinator is shutting down");
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) return absl::NotFoundError(absl::StrCat("unknown worker ", worker_id));
  if (it->second.inbox.empty()) return std::optional<v1::Assignment>();
  v1::Assignment a = std::move(it->second.inbox.front());
  it->second.inbox.pop_front();
  return std::optional<v1::Assignment>(std::move(a));
}

absl::StatusOr<v1::EpochPlan> Coordinator::GetEpochPlan(const std::string& job_id, int epoch) {
  if (epoch < 0) return absl::InvalidArgumentError(absl::StrCat("epoch: must not be negative, got ", epoch));
  absl::MutexLock lock(&mu_);
  JobRuntime* rt = FindJobLocked(job_id);
  if (rt == nullptr) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  v1::EpochPlan plan;
  plan.set_epoch(epoch);
  plan.set_seed(ddp::EpochSeed(rt->job.spec().training().seed(), epoch));
  plan.set_num_samples(rt->job.spec().data().synthetic().num_samples());
  return plan;
}

void Coordinator::FreeWorkerLocked(Worker* w) {
  w->state = WorkerState::kIdle;
  w->job_id.clear();
  w->generation = 0;
  w->rank = -1;
  w->inbox.clear();
  w->abort_reason.clear();
}

absl::Status Coordinator::ReportResult(const v1::ReportResultRequest& request) {
  absl::MutexLock lock(&mu_);
  auto wit = workers_.find(request.worker_id());
  if (wit == workers_.end()) return absl::NotFoundError(absl::StrCat("unknown worker ", request.worker_id()));
  Worker& w = wit->second;
  if (w.job_id == request.job_id() && w.generation == request.generation()) FreeWorkerLocked(&w);

  JobRuntime* rt = FindJobLocked(request.job_id());
  const bool current = rt != nullptr && rt->generation_active &&
                       rt->job.generation() == request.generation() &&
                       rt->job.state() == v1::RUNNING;
  if (current) {
    if (!request.error().empty()) {
      // Errors a restart would only repeat (a bad spec or data, a model mismatch) fail at once.
      const bool retryable = !absl::StartsWith(request.error(), "INVALID_ARGUMENT") &&
                             !absl::StartsWith(request.error(), "FAILED_PRECONDITION") &&
                             !absl::StartsWith(request.error(), "NOT_FOUND");
      RestartOrFailLocked(rt, "RankFailed",
                          absl::StrFormat("rank %d on worker %s failed: %s", request.rank(), request.worker_id(),
                                          request.error()),
                          retryable);
    } else {
      rt->results[request.rank()] = request;
      CompleteIfAllReportedLocked(rt);
    }
  }
  ScheduleLocked();
  return absl::OkStatus();
}

void Coordinator::CompleteIfAllReportedLocked(JobRuntime* rt) {
  const int world = static_cast<int>(rt->ranks.size());
  if (static_cast<int>(rt->results.size()) < world) return;
  const v1::ReportResultRequest& first = rt->results.at(0);
  for (const auto& [rank, r] : rt->results) {
    if (r.param_digest() != first.param_digest()) {
      FinishLocked(rt, v1::FAILED, "ReplicaDivergence",
                   absl::StrFormat("replica divergence: ranks 0 and %d differ (%s vs %s)", rank,
                                   first.param_digest(), r.param_digest()));
      return;
    }
  }
  v1::JobResult result = first.result();
  result.set_param_digest(first.param_digest());
  *rt->job.mutable_result() = result;
  rt->generation_active = false;
  kv_.DropNamespace(KvNamespaceOf(rt->job.id(), rt->job.generation()));
  FinishLocked(rt, v1::SUCCEEDED, "Succeeded",
               absl::StrFormat("%d steps, final loss %.4f, %d ranks agree on %s", result.global_step(),
                               result.final_loss(), world, result.param_digest()));
}

Coordinator::Snapshot Coordinator::TakeSnapshot() {
  absl::MutexLock lock(&mu_);
  Snapshot s;
  for (const auto& [id, rt] : jobs_) {
    ++s.jobs_by_state[rt.job.state()];
    if (rt.job.state() == v1::RUNNING) s.running.push_back(id);
    if (rt.job.generation() > 0) s.restarts[id] = rt.job.restarts();
    if (rt.checkpoints_committed > 0) {
      Snapshot::Checkpoints& c = s.checkpoints[id];
      c.committed = rt.checkpoints_committed;
      c.bytes_total = rt.checkpoint_bytes_total;
      c.last_seconds = rt.job.checkpoints().rbegin()->duration_seconds();
      c.last_bytes = rt.job.checkpoints().rbegin()->total_bytes();
    }
  }
  for (const auto& [id, w] : workers_) {
    (w.state == WorkerState::kIdle ? s.idle_workers : s.assigned_workers)++;
  }
  return s;
}

void Coordinator::CheckLeases() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = options_.clock();
  std::vector<std::string> lost;
  for (const auto& [id, w] : workers_) {
    if (now - w.last_seen > options_.lease_timeout) lost.push_back(id);
  }
  for (const std::string& id : lost) {
    Worker& w = workers_.at(id);
    const std::string why = absl::StrFormat("worker %s (%s pid %d) lost: no heartbeat for %s", id,
                                            w.info.hostname(), w.info.pid(),
                                            absl::FormatDuration(now - w.last_seen));
    GS_LOG(WARNING) << why;
    if (w.state == WorkerState::kAssigned) {
      JobRuntime* rt = FindJobLocked(w.job_id);
      if (rt != nullptr && rt->generation_active && rt->job.generation() == w.generation) {
        RestartOrFailLocked(rt, "WorkerLost", absl::StrCat("rank ", w.rank, ": ", why), true);
      }
    }
    workers_.erase(id);
    worker_order_.erase(std::remove(worker_order_.begin(), worker_order_.end(), id), worker_order_.end());
  }
  // Also on quiet ticks: an elastic job's last call and scale-up delay run out with time alone.
  ScheduleLocked();
  CheckStallsLocked();
}

}  // namespace gradsync::coordinator

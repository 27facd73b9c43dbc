// The worker-facing half of the coordinator: membership, leases, assignments and results.
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator.h"
#include "gradsync/core/log.h"
#include "gradsync/core/terminal_text.h"
#include "gradsync/ddp/sampler.h"

namespace gradsync::coordinator {
namespace {

// Errors a restart would only repeat (a bad spec or data, a model mismatch) fail the job at once.
bool RestartMayHelp(const std::string& error) {
  return !absl::StartsWith(error, "INVALID_ARGUMENT") && !absl::StartsWith(error, "FAILED_PRECONDITION") &&
         !absl::StartsWith(error, "NOT_FOUND");
}

// Ranks of one job that fail during setup on this many different workers fail the job: its model,
// data or spec is what breaks, and another restart would only break the next worker too.
constexpr int kSetupFailureWorkers = 2;

struct RankFailure {
  std::string reason;
  bool retryable = true;
};

// What a rank's reported error means for its job, which `rt` records.
RankFailure RankFailureOf(const v1::ReportResultRequest& r, JobRuntime* rt) {
  RankFailure f{absl::StrFormat("rank %d on worker %s failed%s: %s", r.rank(), r.worker_id(),
                                r.during_setup() ? " during setup" : "", r.error()),
                RestartMayHelp(r.error())};
  if (!r.during_setup() || !f.retryable) return f;
  if (const int workers = rt->AddSetupFailure(r.worker_id()); workers >= kSetupFailureWorkers) {
    absl::StrAppendFormat(&f.reason, " (ranks of this job failed during setup on %d workers: not retried)", workers);
    f.retryable = false;
  }
  return f;
}

// How a script job ended once every rank reported: what its reports reached, if it reported steps.
std::string ScriptOutcome(const v1::JobResult& agreed, int ranks, bool cancelled) {
  std::string out = cancelled ? absl::StrFormat("cancelled by request: the commands of %d ranks were stopped", ranks)
                              : absl::StrFormat("the commands of %d ranks exited 0", ranks);
  if (agreed.global_step() > 0) {
    absl::StrAppendFormat(&out, "; %d steps reported, final loss %.4f", agreed.global_step(), agreed.final_loss());
  }
  return out;
}

}  // namespace

v1::RegisterWorkerResponse Coordinator::RegisterWorker(const v1::RegisterWorkerRequest& request) {
  StateLock lock(this);
  std::string id;
  do {
    id = NewIdLocked(request.name().empty() ? "worker" : request.name());
  } while (workers_.Contains(id));
  const WorkerLease& lease = workers_.Add(id, request, options_.clock());
  GS_LOG(INFO) << "worker " << TerminalSafe(id) << " registered from " << TerminalSafe(request.hostname()) << " pid "
               << request.pid() << " device " << TerminalSafe(request.device().description());
  ScheduleLocked();
  return RegistrationOf(lease);
}

v1::RegisterWorkerResponse Coordinator::RegistrationOf(const WorkerLease& lease) const {
  v1::RegisterWorkerResponse resp;
  resp.set_worker_id(lease.id());
  resp.set_heartbeat_interval_ms(absl::ToInt64Milliseconds(options_.heartbeat_interval));
  resp.set_lease_timeout_ms(absl::ToInt64Milliseconds(options_.lease_timeout));
  resp.set_session_token(lease.session());
  return resp;
}

v1::HeartbeatResponse Coordinator::Heartbeat(const v1::HeartbeatRequest& request) {
  v1::HeartbeatResponse resp;
  StateLock lock(this);
  WorkerLease* w = workers_.Find(request.worker_id());
  if (w == nullptr) {
    resp.set_action(v1::HeartbeatResponse::REREGISTER);
    resp.set_reason(absl::StrCat("unknown worker ", request.worker_id()));
    return resp;
  }
  w->Renew(options_.clock());
  resp.set_action(v1::HeartbeatResponse::CONTINUE);
  if (w->idle()) return resp;

  JobRuntime* rt = FindJobLocked(w->job_id());
  const Generation* gen = rt == nullptr ? nullptr : rt->generation();
  if (gen == nullptr || gen->number() != w->generation()) {
    // The worker's generation is over. A worker that reports no job has already stopped.
    if (request.job_id().empty()) {
      w->Free();
      ScheduleLocked();
    } else {
      resp.set_action(v1::HeartbeatResponse::ABORT);
      resp.set_reason(w->abort_reason().empty() ? "generation ended" : w->abort_reason());
    }
    return resp;
  }
  resp.set_checkpoint_requested(rt->checkpoint_requested());
  if (rt->stopping()) {
    resp.set_action(v1::HeartbeatResponse::STOP);
    resp.set_reason("the job is cancelled: stop at the next step boundary and save the weights");
  }
  if (w->Holds(request.job_id(), request.generation())) RecordBeatLocked(rt, *w, request);
  return resp;
}

v1::ListWorkersResponse Coordinator::ListWorkers() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = options_.clock();
  v1::ListWorkersResponse resp;
  for (const WorkerLease* w : workers_.InOrder()) *resp.add_workers() = DescribeLease(*w, now);
  for (v1::Worker& w : lost_workers_.Recent(now)) *resp.add_workers() = std::move(w);
  return resp;
}

absl::StatusOr<std::optional<v1::Assignment>> Coordinator::NextAssignment(const std::string& worker_id,
                                                                          absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const WorkerLease* w = workers_.Find(worker_id);
    return shutdown_ || w == nullptr || w->has_assignment();
  };
  assignment_waits_.Wait(&mu_, worker_id, absl::Now() + timeout, ready);
  if (shutdown_) return absl::UnavailableError("coordinator is shutting down");
  WorkerLease* w = workers_.Find(worker_id);
  if (w == nullptr) return absl::NotFoundError(absl::StrCat("unknown worker ", worker_id));
  return w->TakeAssignment();
}

absl::StatusOr<v1::EpochPlan> Coordinator::GetEpochPlan(const std::string& job_id, int epoch) {
  if (epoch < 0) return absl::InvalidArgumentError(absl::StrCat("epoch: must not be negative, got ", epoch));
  absl::MutexLock lock(&mu_);
  const JobRuntime* rt = FindJobLocked(job_id);
  if (rt == nullptr) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  v1::EpochPlan plan;
  plan.set_epoch(epoch);
  plan.set_seed(ddp::EpochSeed(rt->spec().training().seed(), epoch));
  plan.set_num_samples(rt->spec().data().synthetic().num_samples());
  return plan;
}

absl::Status Coordinator::ReportResult(const v1::ReportResultRequest& request) {
  StateLock lock(this);
  WorkerLease* w = workers_.Find(request.worker_id());
  if (w == nullptr) return absl::NotFoundError(absl::StrCat("unknown worker ", request.worker_id()));
  // Whether the reporter ran a rank of that generation: only then is what it says it keeps taken.
  const bool ran_it = w->Holds(request.job_id(), request.generation()) && w->rank() == request.rank();
  if (w->Holds(request.job_id(), request.generation())) w->Free();

  JobRuntime* rt = FindJobLocked(request.job_id());
  Generation* gen = rt == nullptr ? nullptr : rt->RunningGeneration(request.generation());
  if (gen != nullptr) {
    if (absl::Status s = gen->CheckReporter(request.worker_id(), request.rank()); !s.ok()) return s;
  }
  // A survivor of the job's latest generation keeps its state for the next one (the generation
  // may have ended already: the first failure's report ends it, the others come after). A worker
  // that held no rank of it is not taken at its word: it would become the next generation's source.
  if (ran_it && rt != nullptr && !request.error().empty() && request.generation() == rt->job().generation()) {
    rt->recovery().Reached(request.result().global_step());
    if (request.has_held() && request.held().step() >= 0) rt->recovery().Held(request.worker_id(), request.held());
  }
  if (gen != nullptr && !request.error().empty()) {
    rt->NoteReached(request.result());
    const RankFailure failure = RankFailureOf(request, rt);
    RestartOrFailLocked(rt, "RankFailed", failure.reason, failure.retryable);
  } else if (gen != nullptr && gen->AddResult(request)) {
    CompleteLocked(rt);
  }
  ScheduleLocked();
  if (absl::Status s = lock.Commit(); !s.ok()) return s;
  // The worker is free either way; a result for a generation that no longer runs (aborted, or
  // restarted) is not taken, and the reporter is told so.
  if (gen == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("job ", request.job_id(), " generation ", request.generation(),
                                                      " is not running: its result is not taken"));
  }
  return absl::OkStatus();
}

void Coordinator::CompleteLocked(JobRuntime* rt) {
  absl::StatusOr<v1::JobResult> agreed = rt->generation()->AgreedResult();
  if (!agreed.ok()) {
    FinishLocked(rt, v1::FAILED, "ReplicaDivergence", std::string(agreed.status().message()));
    return;
  }
  v1::JobResult result = *agreed;
  result.set_peak_flops(rt->generation()->peak_flops());
  rt->SetResult(result);
  // Every rank has reported and is free already: nobody to tell to abort.
  const std::unique_ptr<Generation> done = rt->EndGeneration();
  kv_.DropNamespace(done->kv_namespace());
  if (rt->spec().has_script()) {
    FinishLocked(rt, rt->stopping() ? v1::CANCELLED : v1::SUCCEEDED, rt->stopping() ? "Cancelled" : "Succeeded",
                 ScriptOutcome(*agreed, done->world_size(), rt->stopping()));
    return;
  }
  if (rt->stopping()) {
    FinishLocked(rt, v1::CANCELLED, "Cancelled",
                 absl::StrFormat("cancelled by request: stopped at step %d, final loss %.4f, weights in %s",
                                 agreed->global_step(), agreed->final_loss(), agreed->weights_path()));
    return;
  }
  FinishLocked(rt, v1::SUCCEEDED, "Succeeded",
               absl::StrFormat("%d steps, final loss %.4f, %d ranks agree on %s", agreed->global_step(),
                               agreed->final_loss(), done->world_size(), agreed->param_digest()));
}

namespace {

double UnixSeconds(const google::protobuf::Timestamp& t) {
  return static_cast<double>(t.seconds()) + static_cast<double>(t.nanos()) * 1e-9;
}

}  // namespace

Coordinator::Snapshot Coordinator::TakeSnapshot() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = options_.clock();
  Snapshot s;
  for (const auto& [id, rt] : jobs_) {
    ++s.jobs_by_state[rt.state()];
    if (rt.state() == v1::RUNNING) s.running.push_back(id);
    if (rt.job().generation() > 0) s.restarts[id] = rt.job().restarts();
    if (rt.checkpoints_committed() > 0) {
      Snapshot::Checkpoints& c = s.checkpoints[id];
      c.committed = rt.checkpoints_committed();
      c.bytes_total = rt.checkpoint_bytes_total();
      c.last_seconds = rt.job().checkpoints().rbegin()->duration_seconds();
      c.last_bytes = rt.job().checkpoints().rbegin()->total_bytes();
      c.last_commit_time = UnixSeconds(rt.job().checkpoints().rbegin()->commit_time());
    }
    if (!rt.ended() || UnixSeconds(rt.job().update_time()) > absl::ToUnixSeconds(now - absl::Hours(24))) {
      s.jobs.push_back({id, rt.state(), rt.job().state_reason()});
      s.stalls[id] = rt.stalls();
      const v1::RecoveryStats& r = rt.recovery().stats();
      if (r.live_recoveries() + r.checkpoint_recoveries() > 0) s.recoveries[id] = r;
    }
  }
  s.workers_lost = workers_lost_;
  s.idle_workers = static_cast<int>(workers_.CountIdle());
  s.assigned_workers = static_cast<int>(workers_.size()) - s.idle_workers;
  return s;
}

void Coordinator::CheckLeases() {
  StateLock lock(this);
  const absl::Time now = options_.clock();
  for (const std::string& id : workers_.Expired(now, options_.lease_timeout)) LoseWorkerLocked(id, now);
  CheckAdoptionsLocked();
  // Also on quiet ticks: an elastic job's last call and scale-up delay run out with time alone.
  ScheduleLocked();
  CheckStallsLocked();
  CheckStopsLocked();
}

void Coordinator::CheckStopsLocked() {
  const absl::Time now = options_.clock();
  for (auto& [id, rt] : jobs_) {
    if (rt.ended() || !rt.stopping() || now < rt.stop_deadline()) continue;
    FinishLocked(&rt, v1::CANCELLED, "Cancelled",
                 absl::StrCat("cancelled by request; the ranks did not stop within ",
                              absl::FormatDuration(options_.cancel_grace), ": aborted without saving the weights"));
  }
}

void Coordinator::LoseWorkerLocked(const std::string& id, absl::Time now) {
  const WorkerLease& w = *workers_.Find(id);
  const std::string why = absl::StrFormat("worker %s (%s pid %d) lost: no heartbeat for %s", TerminalSafe(id),
                                          TerminalSafe(w.info().hostname()),
                                          w.info().pid(), absl::FormatDuration(w.SilentFor(now)));
  GS_LOG(WARNING) << why;
  ++workers_lost_;
  // Before the restart below frees the lease: the listing shows the rank the worker held.
  lost_workers_.Add(w, now);
  if (!w.idle()) {
    JobRuntime* rt = FindJobLocked(w.job_id());
    const Generation* gen = rt == nullptr ? nullptr : rt->generation();
    if (gen != nullptr && gen->number() == w.generation()) {
      RestartOrFailLocked(rt, "WorkerLost", absl::StrCat("rank ", w.rank(), ": ", why), true);
    }
  }
  for (auto& [job_id, rt] : jobs_) rt.recovery().Forget(id);
  workers_.Remove(id);
  assignment_waits_.Forget(id);
}

Coordinator::AssignmentWaitStats Coordinator::TEST_AssignmentWaits() {
  absl::MutexLock lock(&mu_);
  return {assignment_waits_.TEST_waiters(), assignment_waits_.TEST_checks()};
}

absl::StatusOr<Generation*> Coordinator::ReportedGenerationLocked(const std::string& job_id, int generation,
                                                                  const std::string& worker_id, int rank) {
  JobRuntime* rt = FindJobLocked(job_id);
  Generation* gen = rt == nullptr ? nullptr : rt->RunningGeneration(generation);
  if (gen == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("job ", job_id, " generation ", generation, " is not running"));
  }
  if (absl::Status s = gen->CheckReporter(worker_id, rank); !s.ok()) return s;
  return gen;
}

}  // namespace gradsync::coordinator

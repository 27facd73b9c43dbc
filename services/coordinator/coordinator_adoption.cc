// Generations that outlive a coordinator (adoption.h): the record of each running generation that
// the store keeps, the generations kept at recovery, the claims of their returning workers, and the
// restart of a generation whose ranks did not all come back in time.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "coordinator.h"
#include "gradsync/core/log.h"

namespace gradsync::coordinator {
namespace {

// "rank 1 (worker W on host)" for each of `ranks` of the kept generation.
std::string DescribeRanks(const Adoption& adoption, const std::vector<int>& ranks) {
  std::vector<std::string> names;
  for (int r : ranks) {
    names.push_back(
        absl::StrFormat("rank %d (worker %s on %s)", r, adoption.holder(r).worker_id(), adoption.holder(r).hostname()));
  }
  return absl::StrJoin(names, ", ");
}

// Why no rank of `rt` (nullptr: no such job) can be claimed by `claim` now.
absl::Status NotAwaitingAdoption(const v1::RunningRank& claim, const JobRuntime* rt) {
  if (rt == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("running.jobId: job ", claim.job_id(), " is unknown to this coordinator; its rank cannot go on"));
  }
  if (rt->state() != v1::RUNNING || rt->job().generation() != claim.generation()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "running.generation: job %s is %s at generation %d, not running generation %d: that rank cannot go on",
        rt->id(), v1::JobState_Name(rt->state()), rt->job().generation(), claim.generation()));
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "running.generation: generation %d of job %s awaits no worker (this coordinator scheduled it, or every rank is "
      "back)",
      claim.generation(), rt->id()));
}

}  // namespace

absl::Duration Coordinator::AdoptGrace() const { return options_.adopt_grace.value_or(2 * options_.lease_timeout); }

bool Coordinator::KeepGenerationLocked(JobRuntime* rt, const v1::GenerationRecord* record) {
  const absl::Duration grace = AdoptGrace();
  if (record == nullptr || grace <= absl::ZeroDuration() || record->ranks_size() == 0 ||
      record->generation() != rt->job().generation()) {
    return false;
  }
  const absl::Time now = options_.clock();
  rt->KeepGeneration(*record, now, now + grace);
  AddEventLocked(rt, "CoordinatorRestarted",
                 absl::StrFormat("generation %d kept; waiting up to %s for its %d ranks to report back",
                                 record->generation(), absl::FormatDuration(grace), record->ranks_size()));
  TouchLocked(rt);
  return true;
}

absl::StatusOr<v1::RegisterWorkerResponse> Coordinator::AdoptWorker(const v1::RegisterWorkerRequest& request,
                                                                    absl::string_view session) {
  const v1::RunningRank& claim = request.running();
  if (claim.job_id().empty()) return absl::InvalidArgumentError("running.jobId: required");
  const std::string digest = session.empty() ? std::string() : SessionDigest(session);
  StateLock lock(this);
  JobRuntime* rt = FindJobLocked(claim.job_id());
  Generation* gen = rt == nullptr ? nullptr : rt->RunningGeneration(claim.generation());
  if (gen == nullptr || gen->adoption() == nullptr) return NotAwaitingAdoption(claim, rt);
  if (absl::Status s = gen->adoption()->CheckClaim(claim, request.hostname(), digest); !s.ok()) return s;
  if (workers_.Contains(claim.worker_id())) {
    return absl::FailedPreconditionError(
        absl::StrCat("running.workerId: a worker ", claim.worker_id(), " is registered already"));
  }
  gen->adoption()->TakeBack(claim.rank());
  v1::RegisterWorkerRequest info = request;
  info.clear_running();
  WorkerLease& lease = workers_.Add(claim.worker_id(), info, options_.clock());
  lease.Adopt(rt->id(), gen->number(), claim.rank());
  GS_LOG(INFO) << "worker " << lease.id() << " from " << request.hostname() << " pid " << request.pid()
               << " is back with rank " << claim.rank() << " of job " << rt->id() << " generation " << gen->number();
  if (gen->adoption()->complete()) CompleteAdoptionLocked(rt);
  // The stored record now holds the worker's new session, for the next restart.
  TouchLocked(rt);
  v1::RegisterWorkerResponse resp = RegistrationOf(lease);
  resp.set_adopted(true);
  return resp;
}

void Coordinator::CompleteAdoptionLocked(JobRuntime* rt) {
  Generation* gen = rt->generation();
  const Adoption& adoption = *gen->adoption();
  std::vector<int> all(static_cast<size_t>(gen->world_size()));
  for (int r = 0; r < gen->world_size(); ++r) all[static_cast<size_t>(r)] = r;
  AddEventLocked(
      rt, "GenerationAdopted",
      absl::StrFormat("generation %d goes on: %s reported back %s after the coordinator's restart", gen->number(),
                      DescribeRanks(adoption, all), absl::FormatDuration(options_.clock() - adoption.since())));
  gen->EndAdoption();
}

void Coordinator::CheckAdoptionsLocked() {
  const absl::Time now = options_.clock();
  for (auto& [id, rt] : jobs_) {
    const Generation* gen = rt.generation();
    if (gen == nullptr || gen->adoption() == nullptr || now < gen->adoption()->deadline()) continue;
    const std::string reason = absl::StrFormat(
        "generation %d: %s did not report back within %s of the coordinator's restart", gen->number(),
        DescribeRanks(*gen->adoption(), gen->adoption()->Missing()), absl::FormatDuration(AdoptGrace()));
    // The ranks that are back abort on their next heartbeat, as after any failure. A generation
    // preempted with its checkpoint lost nothing: it is requeued without counting a restart.
    if (rt.Preempted()) {
      RestartLocked(&rt, "AdoptionTimedOut", reason, /*counted=*/false);
    } else {
      RestartOrFailLocked(&rt, "AdoptionTimedOut", reason, true);
    }
  }
}

v1::GenerationRecord Coordinator::GenerationRecordLocked(const JobRuntime& rt) const {
  v1::GenerationRecord record;
  const Generation* gen = rt.generation();
  if (gen == nullptr || rt.state() != v1::RUNNING) return record;
  record.set_generation(gen->number());
  for (int r = 0; r < gen->world_size(); ++r) {
    v1::RankHolder* holder = record.add_ranks();
    const std::string& id = gen->ranks()[static_cast<size_t>(r)];
    const WorkerLease* w = workers_.Find(id);
    if (w != nullptr && w->Holds(rt.id(), gen->number())) {
      holder->set_worker_id(id);
      holder->set_hostname(w->info().hostname());
      holder->set_session_sha256(w->session_digest());
    } else if (gen->adoption() != nullptr) {
      *holder = gen->adoption()->holder(r);
    } else {
      // The worker is gone: with no session to match, no claim of this rank succeeds.
      holder->set_worker_id(id);
    }
  }
  return record;
}

}  // namespace gradsync::coordinator

// The coordinator's gang scheduler: which queued job starts on which idle workers, and how a
// running elastic job grows into idle workers through a checkpoint. Whether a queued job may
// start (the last call, waiting for survivors) is JobRuntime::ReadyToStart.
#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "coordinator.h"
#include "gradsync/device/gpu_peak.h"
#include "gradsync/spec/choices.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/spec/placement.h"

namespace gradsync::coordinator {
namespace {

// Where a generation's state comes from: a survivor's memory (live), a committed checkpoint, or
// neither (the job seed).
struct ResumeFrom {
  std::optional<v1::LiveResume> live;
  std::optional<v1::CheckpointManifest> checkpoint;
  int64_t step() const { return live ? live->step() : checkpoint ? checkpoint->step() : 0; }
};

v1::Assignment AssignmentFor(const v1::Job& job, size_t rank, size_t world, const std::string& dir,
                             const ResumeFrom& resume, const v1::Placement& where,
                             const std::vector<std::string>& data_roots) {
  v1::Assignment a;
  a.set_job_id(job.id());
  a.set_generation(job.generation());
  a.set_rank(static_cast<int>(rank));
  a.set_world_size(static_cast<int>(world));
  *a.mutable_spec() = job.spec();
  a.set_weights_path((std::filesystem::path(dir) / "weights.bin").string());
  a.set_checkpoint_root((std::filesystem::path(dir) / "checkpoints").string());
  if (resume.live.has_value()) {
    *a.mutable_live_from() = *resume.live;
  } else if (resume.checkpoint.has_value()) {
    *a.mutable_resume_from() = *resume.checkpoint;
  }
  *a.mutable_placement() = where;
  a.mutable_data_roots()->Assign(data_roots.begin(), data_roots.end());
  a.set_restarts(job.restarts());
  return a;
}

// The bf16 peaks of the gang's GPUs added up; 0 when any rank runs in fp32, on a CPU, or on a GPU
// of unknown peak (no MFU is better than a wrong one).
double PeakFlops(const std::vector<WorkerLease*>& gang, const std::vector<v1::Placement>& placements) {
  double total = 0;
  for (size_t r = 0; r < gang.size(); ++r) {
    const spec::Placement p = spec::ParsePlacement(placements[r]).value_or(spec::Placement{});
    if (p.device != spec::Device::kCuda || p.precision != spec::Precision::kBf16) return 0;
    const double peak = device::DenseBf16PeakFlops(gang[r]->info().device().description());
    if (peak <= 0) return 0;
    total += peak;
  }
  return total;
}

// Where each rank of `hosts` computes: a built-in model's plan decides, or for a script job the
// workers' devices alone.
absl::StatusOr<std::vector<v1::Placement>> PlaceGang(const v1::JobSpec& spec,
                                                     const std::vector<spec::RankHost>& hosts) {
  if (spec.has_script()) return spec::PlaceScriptRanks(spec, hosts);
  absl::StatusOr<nn::ModelPlan> model = spec::PlanModel(spec);
  if (!model.ok()) return model.status();
  return spec::PlaceRanks(spec, *model, hosts);
}

// Under training.recovery "live", the rank of `gang` (worker ids by rank) that keeps the furthest
// state of `rt` in memory, when that is no older than the newest committed checkpoint (one a later
// generation wrote is further). No checkpoint is verified for it: none is read.
std::optional<v1::LiveResume> LiveSource(const JobRuntime& rt, const std::vector<std::string>& gang) {
  const v1::JobSpec& spec = rt.spec();
  if (spec.has_script() || spec::ParseRecovery(spec.training().recovery()).value_or(spec::Recovery::kLive) !=
                               spec::Recovery::kLive) {
    return std::nullopt;
  }
  std::optional<v1::LiveResume> live = rt.recovery().Source(gang);
  const auto& committed = rt.job().checkpoints();
  if (live.has_value() && !committed.empty() && committed.rbegin()->step() > live->step()) return std::nullopt;
  return live;
}

std::vector<std::string> IdsOf(const std::vector<WorkerLease*>& workers) {
  std::vector<std::string> ids;
  for (const WorkerLease* w : workers) ids.push_back(w->id());
  return ids;
}

std::string DescribeResume(const ResumeFrom& resume) {
  if (resume.live.has_value()) {
    return absl::StrCat("; resuming live at step ", resume.live->step(), " from rank ", resume.live->source_rank(),
                        "'s memory");
  }
  if (resume.checkpoint.has_value()) return absl::StrCat("; resuming from the checkpoint at step ", resume.checkpoint->step());
  return "";
}

// "rank 0 on W (host, cuda:0 bf16)", for the Scheduled event.
std::string DescribeRank(size_t rank, const WorkerLease& w, const v1::Placement& where) {
  // spec::PlaceRanks wrote `where`, so it parses.
  const bool gpu = spec::ParsePlacement(where).value_or(spec::Placement{}).device == spec::Device::kCuda;
  return absl::StrCat("rank ", rank, " on ", w.id(), " (", w.info().hostname(), ", ", where.device(),
                      gpu ? absl::StrCat(":", w.info().device().gpu_index()) : "", " ", where.precision(), ")");
}

}  // namespace

void Coordinator::ScheduleLocked() {
  std::vector<WorkerLease*> idle = workers_.Idle();
  std::vector<std::string> still_pending;
  std::vector<std::pair<JobRuntime*, std::string>> unplaceable;
  const absl::Time now = options_.clock();
  // Oldest first; a job too large for the idle pool does not block smaller ones behind it.
  for (const std::string& id : queue_) {
    JobRuntime& rt = jobs_.at(id);
    const Generation* running = rt.generation();
    const PoolView pool{idle.size(), workers_.size(), workers_.Returning(id, running ? running->number() : 0)};
    std::string reason;
    const std::string checkpoints = (std::filesystem::path(rt.Dir(options_.artifact_root)) / "checkpoints").string();
    // A generation that resumes live reads no checkpoint, so it does not wait for one's verdict.
    if (!rt.ReadyToStart(pool, now, options_.rendezvous_last_call, &reason) ||
        (!LiveSource(rt, IdsOf(idle)).has_value() && !rt.ResumeVerified(checkpoints, verifier_, &reason))) {
      still_pending.push_back(id);
      if (rt.SetReason(reason)) TouchLocked(&rt);
      continue;
    }
    const auto take = static_cast<std::ptrdiff_t>(std::min<size_t>(idle.size(), MaxWorkers(rt.spec())));
    // Workers the job already failed to set up on come last: a retry runs elsewhere when it can.
    std::stable_partition(idle.begin(), idle.end(), [&rt](const WorkerLease* w) { return !rt.FailedSetupOn(w->id()); });
    std::vector<WorkerLease*> gang(idle.begin(), idle.begin() + take);
    std::vector<spec::RankHost> hosts;
    for (const WorkerLease* w : gang) hosts.push_back(w->host());
    absl::StatusOr<std::vector<v1::Placement>> placement = PlaceGang(rt.spec(), hosts);
    if (!placement.ok()) {
      // The gang stays idle for the jobs behind; this one cannot run on what registered.
      unplaceable.emplace_back(&rt, std::string(placement.status().message()));
      continue;
    }
    idle.erase(idle.begin(), idle.begin() + take);
    rt.ClearLastCall();
    AssignLocked(&rt, gang, *placement);
  }
  queue_ = std::move(still_pending);
  for (auto& [rt, message] : unplaceable) FinishLocked(rt, v1::FAILED, "PlacementFailed", message);
  ScaleUpLocked(idle.size());
}

void Coordinator::ScaleUpLocked(size_t idle) {
  const absl::Time now = options_.clock();
  for (auto& [id, rt] : jobs_) {
    if (idle == 0) return;
    Generation* gen = rt.generation();
    // A generation awaiting its workers after a restart grows once they are back.
    if (gen == nullptr || rt.state() != v1::RUNNING || gen->scale_up_requested() || gen->adoption() != nullptr) {
      continue;
    }
    const size_t ranks = static_cast<size_t>(gen->world_size());
    const size_t max = static_cast<size_t>(MaxWorkers(rt.spec()));
    if (ranks >= max || now - gen->start() < options_.scale_up_delay) continue;
    const size_t grow = std::min(idle, max - ranks);
    idle -= grow;
    gen->RequestScaleUp();
    rt.RequestCheckpoint();
    AddEventLocked(&rt, "ScaleUpRequested",
                   absl::StrFormat("%d idle workers: checkpointing at the next step to grow from %d to %d ranks", grow,
                                   ranks, ranks + grow));
    TouchLocked(&rt);
  }
}

void Coordinator::RescaleLocked(JobRuntime* rt) {
  const std::string reason = absl::StrFormat("generation %d ends at its checkpoint to grow beyond %d ranks",
                                             rt->job().generation(), rt->generation()->world_size());
  EndGenerationLocked(rt, reason);
  rt->Requeue(reason);
  AddEventLocked(rt, "Rescaling", reason);
  QueueLocked(rt->id());
  TouchLocked(rt);
}

void Coordinator::AssignLocked(JobRuntime* rt, const std::vector<WorkerLease*>& gang,
                               const std::vector<v1::Placement>& placements) {
  const std::vector<std::string> ranks = IdsOf(gang);
  // The gang's workers keep nothing of another job's from now on.
  for (auto& [id, other] : jobs_) {
    if (&other == rt) continue;
    for (const std::string& wid : ranks) other.recovery().Forget(wid);
  }
  rt->StartGeneration(ranks, options_.clock()).set_peak_flops(PeakFlops(gang, placements));
  // Keys written before the job held this namespace (by anyone the cluster token admits) must
  // not reach its ranks' rendezvous.
  kv_.DropNamespace(rt->generation()->kv_namespace());
  const std::string dir = rt->Dir(options_.artifact_root);
  // After StartGeneration: a corrupt checkpoint is set aside under the new generation's number.
  ResumeFrom resume;
  // The transfer runs on CPU replicas (gradsync/train/live_state.h): a gang placed on GPUs (the
  // worker without one was lost) resumes from the checkpoint.
  const bool on_cpu = std::all_of(placements.begin(), placements.end(),
                                  [](const v1::Placement& p) { return p.device() == "cpu"; });
  if (on_cpu) resume.live = LiveSource(*rt, ranks);
  if (!resume.live.has_value()) {
    resume.checkpoint =
        rt->ResumePoint((std::filesystem::path(dir) / "checkpoints").string(), verifier_, options_.clock());
  }
  std::vector<std::string> where;
  for (size_t r = 0; r < gang.size(); ++r) {
    v1::Assignment assignment =
        AssignmentFor(rt->job(), r, gang.size(), dir, resume, placements[r], options_.data_roots);
    assignment.set_artifact_root(options_.artifact_root);
    gang[r]->Assign(std::move(assignment));
    assignment_waits_.Wake(gang[r]->id());
    where.push_back(DescribeRank(r, *gang[r], placements[r]));
  }
  AddEventLocked(
      rt, "Scheduled",
      absl::StrCat("generation ", rt->job().generation(), " with ", gang.size(), " ranks over ",
                   placements.empty() ? "gloo" : placements[0].backend(), ": ", absl::StrJoin(where, ", "),
                   DescribeResume(resume)));
  if (std::optional<std::string> changed = rt->recovery().Started(ranks, resume.live, resume.step(), options_.clock())) {
    AddEventLocked(rt, "QuorumChanged", *changed);
  }
  rt->StoreRecoveryStats();
  TouchLocked(rt);
}

}  // namespace gradsync::coordinator

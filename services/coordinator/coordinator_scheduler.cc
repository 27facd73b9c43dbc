// The coordinator's gang scheduler: which queued job starts on which idle workers, how elastic
// jobs (minWorkers..maxWorkers) wait for stragglers of their previous generation and for late
// joiners, and how a running elastic job grows into idle workers through a checkpoint.
#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "coordinator.h"
#include "placement.h"

namespace gradsync::coordinator {

int MinWorkers(const v1::JobSpec& spec) {
  // Jobs stored before elastic ranges existed have neither field.
  return spec.training().min_workers() > 0 ? spec.training().min_workers() : spec.training().world_size();
}

int MaxWorkers(const v1::JobSpec& spec) {
  return spec.training().max_workers() > 0 ? spec.training().max_workers() : spec.training().world_size();
}

int Coordinator::ReturningWorkersLocked(const JobRuntime& rt) const {
  int n = 0;
  for (const auto& [id, w] : workers_) {
    n += w.state == WorkerState::kAssigned && w.job_id == rt.job.id() &&
         !(rt.generation_active && w.generation == rt.job.generation());
  }
  return n;
}

bool Coordinator::ReadyToStartLocked(JobRuntime* rt, size_t idle, std::string* reason) {
  const size_t min = static_cast<size_t>(MinWorkers(rt->job.spec()));
  const size_t max = static_cast<size_t>(MaxWorkers(rt->job.spec()));
  if (idle >= max) return true;
  // Survivors of the previous generation come back within a heartbeat or two; a generation started
  // without them would shrink for nothing.
  if (const int returning = ReturningWorkersLocked(*rt); returning > 0) {
    *reason = absl::StrFormat("waiting for %d workers of generation %d to return", returning, rt->job.generation());
    return false;
  }
  if (idle < min) {
    rt->quorum_since.reset();
    *reason = min == max ? absl::StrFormat("waiting for %d idle workers: %d idle of %d registered", min, idle,
                                           workers_.size())
                         : absl::StrFormat("waiting for %d to %d idle workers: %d idle of %d registered", min, max,
                                           idle, workers_.size());
    return false;
  }
  // A job that ran before goes on at once: its workers are back, and waiting delays recovery.
  if (rt->job.generation() > 0) return true;
  const absl::Time now = options_.clock();
  if (!rt->quorum_since.has_value()) rt->quorum_since = now;
  if (now - *rt->quorum_since >= options_.rendezvous_last_call) return true;
  *reason = absl::StrFormat("%d of %d to %d workers idle; starting within %s unless more join", idle, min, max,
                            absl::FormatDuration(options_.rendezvous_last_call));
  return false;
}

void Coordinator::ScheduleLocked() {
  std::vector<Worker*> idle;
  for (const std::string& wid : worker_order_) {
    Worker& w = workers_.at(wid);
    if (w.state == WorkerState::kIdle) idle.push_back(&w);
  }
  std::vector<std::string> still_pending;
  std::vector<std::pair<JobRuntime*, std::string>> unplaceable;
  // Oldest first; a job too large for the idle pool does not block smaller ones behind it.
  for (const std::string& id : queue_) {
    JobRuntime& rt = jobs_.at(id);
    std::string reason;
    if (ReadyToStartLocked(&rt, idle.size(), &reason)) {
      const auto take = static_cast<std::ptrdiff_t>(std::min<size_t>(idle.size(), MaxWorkers(rt.job.spec())));
      std::vector<Worker*> gang(idle.begin(), idle.begin() + take);
      std::vector<RankHost> hosts;
      for (const Worker* w : gang) hosts.push_back({w->id, w->info.hostname(), w->info.device()});
      absl::StatusOr<std::vector<v1::Placement>> placement = PlaceRanks(rt.job.spec(), hosts);
      if (!placement.ok()) {
        // The gang stays idle for the jobs behind; this one cannot run on what registered.
        unplaceable.emplace_back(&rt, std::string(placement.status().message()));
        continue;
      }
      idle.erase(idle.begin(), idle.begin() + take);
      rt.quorum_since.reset();
      AssignLocked(&rt, gang, *placement);
      continue;
    }
    still_pending.push_back(id);
    if (rt.job.state_reason() != reason) {
      rt.job.set_state_reason(reason);
      TouchLocked(&rt);
    }
  }
  queue_ = std::move(still_pending);
  for (auto& [rt, message] : unplaceable) FinishLocked(rt, v1::FAILED, "PlacementFailed", message);
  ScaleUpLocked(idle.size());
}

void Coordinator::ScaleUpLocked(size_t idle) {
  const absl::Time now = options_.clock();
  for (auto& [id, rt] : jobs_) {
    if (idle == 0) return;
    const size_t ranks = rt.ranks.size();
    const size_t max = static_cast<size_t>(MaxWorkers(rt.job.spec()));
    if (rt.job.state() != v1::RUNNING || !rt.generation_active || rt.scale_up_requested || ranks >= max ||
        now - rt.generation_start < options_.scale_up_delay) {
      continue;
    }
    const size_t grow = std::min(idle, max - ranks);
    idle -= grow;
    rt.scale_up_requested = true;
    rt.checkpoint_requested = true;
    AddEventLocked(&rt, "ScaleUpRequested",
                   absl::StrFormat("%d idle workers: checkpointing at the next step to grow from %d to %d ranks",
                                   grow, ranks, ranks + grow));
    TouchLocked(&rt);
  }
}

void Coordinator::RescaleLocked(JobRuntime* rt) {
  const std::string reason =
      absl::StrFormat("generation %d ends at its checkpoint to grow beyond %d ranks", rt->job.generation(),
                      rt->ranks.size());
  rt->scale_up_requested = false;
  EndGenerationLocked(rt, reason);
  rt->pending_checkpoints.clear();
  rt->job.set_state(v1::RESTARTING);
  rt->job.set_state_reason(reason);
  AddEventLocked(rt, "Rescaling", reason);
  if (std::find(queue_.begin(), queue_.end(), rt->job.id()) == queue_.end()) queue_.push_back(rt->job.id());
  TouchLocked(rt);
}

void Coordinator::AssignLocked(JobRuntime* rt, const std::vector<Worker*>& gang,
                               const std::vector<v1::Placement>& placements) {
  v1::Job& job = rt->job;
  job.set_generation(job.generation() + 1);
  job.set_state(v1::RUNNING);
  job.set_state_reason("");
  rt->ranks.clear();
  rt->results.clear();
  rt->generation_active = true;
  rt->generation_start = options_.clock();
  rt->scale_up_requested = false;
  rt->beats.clear();
  rt->last_progress = rt->generation_start;
  rt->last_step_change = absl::Time();
  rt->step_time = absl::ZeroDuration();
  rt->stalled = false;
  const std::string dir = JobDirLocked(job);
  const std::optional<v1::CheckpointManifest> resume = ResumePointLocked(rt);
  std::vector<std::string> placement;
  for (size_t r = 0; r < gang.size(); ++r) {
    const v1::Placement& where = placements[r];
    Worker* w = gang[r];
    v1::Assignment a;
    a.set_job_id(job.id());
    a.set_generation(job.generation());
    a.set_rank(static_cast<int>(r));
    a.set_world_size(static_cast<int>(gang.size()));
    *a.mutable_spec() = job.spec();
    a.set_weights_path((std::filesystem::path(dir) / "weights.bin").string());
    a.set_checkpoint_root((std::filesystem::path(dir) / "checkpoints").string());
    if (resume.has_value()) *a.mutable_resume_from() = *resume;
    *a.mutable_placement() = where;
    w->state = WorkerState::kAssigned;
    w->job_id = job.id();
    w->generation = job.generation();
    w->rank = static_cast<int>(r);
    w->abort_reason.clear();
    w->inbox.push_back(std::move(a));
    rt->ranks.push_back(w->id);
    placement.push_back(absl::StrCat("rank ", r, " on ", w->id, " (", w->info.hostname(), ", ", where.device(),
                                     where.device() == "cuda" ? absl::StrCat(":", w->info.device().gpu_index()) : "",
                                     " ", where.precision(), ")"));
  }
  AddEventLocked(rt, "Scheduled",
                 absl::StrCat("generation ", job.generation(), " with ", gang.size(), " ranks over ",
                              placements.empty() ? "gloo" : placements[0].backend(), ": ",
                              absl::StrJoin(placement, ", "),
                              resume.has_value() ? absl::StrCat("; resuming from the checkpoint at step ", resume->step())
                                                 : std::string()));
  TouchLocked(rt);
}

}  // namespace gradsync::coordinator

// The coordinator's side of checkpoints and recovery: committing checkpoints once every rank
// wrote its part, choosing a verified checkpoint to resume from, and the restart policy.
#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator.h"
#include "google/protobuf/util/time_util.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/core/log.h"

namespace gradsync::coordinator {

using google::protobuf::util::TimeUtil;

namespace {

constexpr int kDefaultMaxRestarts = 3;
constexpr int kDefaultKeep = 3;

int KeepOf(const v1::JobSpec& spec) {
  return spec.checkpoint().has_keep() ? std::max(1, spec.checkpoint().keep()) : kDefaultKeep;
}

}  // namespace

std::string Coordinator::JobDirLocked(const v1::Job& job) const {
  return job.spec().checkpoint().dir().empty() ? (std::filesystem::path(options_.artifact_dir) / job.id()).string()
                                               : job.spec().checkpoint().dir();
}

void Coordinator::RestartOrFailLocked(JobRuntime* rt, const std::string& type, const std::string& reason,
                                      bool retryable) {
  const v1::TrainingSpec& t = rt->job.spec().training();
  const int budget = t.has_max_restarts() ? t.max_restarts() : kDefaultMaxRestarts;
  if (!retryable || rt->job.restarts() >= budget) {
    FinishLocked(rt, v1::FAILED, type,
                 retryable ? absl::StrCat(reason, " (restart budget of ", budget, " used up)") : reason);
    return;
  }
  if (rt->generation_active) EndGenerationLocked(rt, reason);
  rt->pending_checkpoints.clear();
  rt->job.set_restarts(rt->job.restarts() + 1);
  rt->job.set_state(v1::RESTARTING);
  rt->job.set_state_reason(reason);
  AddEventLocked(rt, type, absl::StrCat(reason, "; restarting (", rt->job.restarts(), " of ", budget, ")"));
  if (std::find(queue_.begin(), queue_.end(), rt->job.id()) == queue_.end()) queue_.push_back(rt->job.id());
  TouchLocked(rt);
}

std::optional<v1::CheckpointManifest> Coordinator::ResumePointLocked(JobRuntime* rt) {
  auto* list = rt->job.mutable_checkpoints();
  while (!list->empty()) {
    const v1::CheckpointManifest& newest = *list->rbegin();
    absl::Status ok = ckpt::VerifyCheckpoint(newest.dir());
    if (ok.ok()) return newest;
    const int64_t bad = newest.step();
    // Set the directory aside under a name that is no step directory: retention and `checkpoint
    // list` skip it, a new checkpoint of the same step gets a fresh directory, and the damaged
    // files stay for inspection.
    std::error_code ec;
    const std::string aside = absl::StrCat(newest.dir(), ".corrupt-g", rt->job.generation());
    std::filesystem::rename(newest.dir(), aside, ec);
    list->RemoveLast();
    AddEventLocked(rt, "CheckpointCorrupt",
                   absl::StrCat("checkpoint at step ", bad, " failed verification (", ok.message(), "); ",
                                ec ? "" : absl::StrCat("set aside as ", aside, "; "),
                                list->empty() ? std::string("no older checkpoint: starting from the job seed")
                                              : absl::StrCat("using the one at step ", list->rbegin()->step())));
  }
  return std::nullopt;
}

absl::StatusOr<v1::ReportCheckpointResponse> Coordinator::ReportCheckpoint(const v1::ReportCheckpointRequest& req) {
  std::string root;
  int keep = kDefaultKeep;
  v1::ReportCheckpointResponse resp;
  {
    absl::MutexLock lock(&mu_);
    JobRuntime* rt = FindJobLocked(req.job_id());
    if (rt == nullptr || !rt->generation_active || rt->job.generation() != req.generation() ||
        rt->job.state() != v1::RUNNING) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", req.job_id(), " generation ", req.generation(), " is not running"));
    }
    auto& parts = rt->pending_checkpoints[req.step()];
    parts[req.rank()] = req;
    const int world = static_cast<int>(rt->ranks.size());
    if (static_cast<int>(parts.size()) < world) return resp;

    v1::CheckpointManifest m;
    m.set_job_id(rt->job.id());
    m.set_generation(rt->job.generation());
    m.set_step(req.step());
    m.set_world_size(world);
    m.set_dir(req.dir());
    absl::Time boundary = absl::InfiniteFuture();
    for (const auto& [rank, part] : parts) {
      *m.add_parts() = part.part();
      m.set_total_bytes(m.total_bytes() + part.part().bytes());
      if (part.has_boundary_time()) {
        boundary = std::min(boundary, absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(part.boundary_time())));
      }
      if (rank == 0) {
        m.set_epoch(part.epoch());
        m.set_cursor(part.cursor());
        m.set_initial_loss(part.initial_loss());
      }
    }
    const absl::Time now = options_.clock();
    *m.mutable_commit_time() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(now));
    if (boundary != absl::InfiniteFuture()) m.set_duration_seconds(absl::ToDoubleSeconds(now - boundary));
    rt->pending_checkpoints.erase(rt->pending_checkpoints.begin(), rt->pending_checkpoints.upper_bound(req.step()));
    // The commit point: a checkpoint exists once its manifest does.
    if (absl::Status s = ckpt::WriteManifest(m.dir(), m); !s.ok()) {
      AddEventLocked(rt, "CheckpointFailed", absl::StrCat("step ", m.step(), ": ", s.message()));
      TouchLocked(rt);
      return s;
    }
    keep = KeepOf(rt->job.spec());
    *rt->job.add_checkpoints() = m;
    while (rt->job.checkpoints_size() > keep) rt->job.mutable_checkpoints()->DeleteSubrange(0, 1);
    rt->checkpoint_requested = false;
    ++rt->checkpoints_committed;
    rt->checkpoint_bytes_total += m.total_bytes();
    AddEventLocked(rt, "CheckpointCommitted",
                   absl::StrFormat("step %d: %.1f MiB from %d ranks in %.2fs (%s)", m.step(),
                                   m.total_bytes() / 1048576.0, world, m.duration_seconds(), m.dir()));
    TouchLocked(rt);
    root = std::filesystem::path(m.dir()).parent_path().string();
    resp.set_committed(true);
    if (rt->scale_up_requested) {
      RescaleLocked(rt);
      ScheduleLocked();
    }
  }
  // Deleting old checkpoints can take a while: outside the lock.
  if (absl::Status s = ckpt::ApplyRetention(root, keep); !s.ok()) {
    GS_LOG(WARNING) << "checkpoint retention in " << root << ": " << s;
  }
  return resp;
}

absl::StatusOr<v1::Job> Coordinator::RequestCheckpoint(const std::string& name) {
  absl::MutexLock lock(&mu_);
  JobRuntime* rt = FindJobLocked(name);
  if (rt == nullptr) return absl::NotFoundError(absl::StrCat("job ", name, " not found"));
  if (rt->job.state() != v1::RUNNING) {
    return absl::FailedPreconditionError(absl::StrCat("job ", rt->job.id(), " is ", v1::JobState_Name(rt->job.state()),
                                                      "; only a running job can checkpoint"));
  }
  rt->checkpoint_requested = true;
  AddEventLocked(rt, "CheckpointRequested", "at the next step boundary");
  TouchLocked(rt);
  return rt->job;
}

int Coordinator::CheckpointAllRunning(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  std::map<std::string, int64_t> before;
  for (auto& [id, rt] : jobs_) {
    if (rt.job.state() != v1::RUNNING) continue;
    rt.checkpoint_requested = true;
    AddEventLocked(&rt, "CheckpointRequested", "the coordinator is stopping (preemption)");
    TouchLocked(&rt);
    before[id] = rt.checkpoints_committed;
  }
  auto all_done = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    for (const auto& [id, n] : before) {
      const JobRuntime& rt = jobs_.at(id);
      if (rt.checkpoints_committed == n && rt.job.state() == v1::RUNNING) return false;
    }
    return true;
  };
  mu_.AwaitWithTimeout(absl::Condition(&all_done), timeout);
  int done = 0;
  for (const auto& [id, n] : before) done += jobs_.at(id).checkpoints_committed > n;
  return done;
}

}  // namespace gradsync::coordinator

// The coordinator's side of checkpoints and recovery: committing a checkpoint once every rank
// wrote its part (the parts are the Generation's, the committed list the JobRuntime's), requests
// and preemption, and the restart policy.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/time_util.h"
#include "coordinator.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/core/log.h"

namespace gradsync::coordinator {

void Coordinator::RestartOrFailLocked(JobRuntime* rt, const std::string& type, const std::string& reason,
                                      bool retryable) {
  if (rt->stopping()) {
    FinishLocked(rt, v1::CANCELLED, "Cancelled", absl::StrCat("cancelled by request; while stopping, ", reason));
    return;
  }
  const int budget = rt->restart_budget();
  if (!retryable || !rt->CanRestart()) {
    FinishLocked(rt, v1::FAILED, type,
                 retryable ? absl::StrCat(reason, " (restart budget of ", budget, " used up)") : reason);
    return;
  }
  RestartLocked(rt, type, reason, /*counted=*/true);
}

void Coordinator::RestartLocked(JobRuntime* rt, const std::string& type, const std::string& reason, bool counted) {
  // A failure: the next generation recovers from it, live from the survivors' memory if it can.
  if (counted && rt->generation() != nullptr) rt->recovery().Failed(rt->generation()->ranks(), options_.clock());
  EndGenerationLocked(rt, reason);
  if (counted) {
    rt->Restart(reason);
    AddEventLocked(rt, type,
                   absl::StrCat(reason, "; restarting (", rt->job().restarts(), " of ", rt->restart_budget(), ")"));
  } else {
    rt->Requeue(reason);
    AddEventLocked(rt, type,
                   absl::StrCat(reason, "; resuming from its preemption checkpoint (not counted as a restart)"));
  }
  QueueLocked(rt->id());
  TouchLocked(rt);
}

absl::StatusOr<v1::ReportCheckpointResponse> Coordinator::ReportCheckpoint(const v1::ReportCheckpointRequest& req) {
  std::string root, committed;
  int keep = 0;
  int64_t epoch = 0;
  v1::ReportCheckpointResponse resp;
  {
    StateLock lock(this);
    absl::StatusOr<Generation*> gen =
        ReportedGenerationLocked(req.job_id(), req.generation(), req.worker_id(), req.rank());
    if (!gen.ok()) return gen.status();
    JobRuntime* rt = FindJobLocked(req.job_id());
    // The coordinator writes the manifest and applies retention: only ever in the job's own root.
    const std::string expected = ckpt::CheckpointDir(
        (std::filesystem::path(rt->Dir(options_.artifact_root)) / "checkpoints").string(), req.step());
    if (req.step() < 0 || req.dir() != expected) {
      return absl::PermissionDeniedError(absl::StrCat("checkpoint dir \"", req.dir(), "\" of step ", req.step(),
                                                      " is not job ", req.job_id(), "'s (", expected, ")"));
    }
    const std::optional<v1::CheckpointManifest> m = (*gen)->AddCheckpointPart(req, options_.clock());
    if (!m.has_value()) return resp;
    // The commit point: a checkpoint exists once its manifest does.
    if (absl::Status s = ckpt::WriteManifest(m->dir(), *m); !s.ok()) {
      AddEventLocked(rt, "CheckpointFailed", absl::StrCat("step ", m->step(), ": ", s.message()));
      TouchLocked(rt);
      return s;
    }
    keep = rt->keep();
    root = std::filesystem::path(m->dir()).parent_path().string();
    committed = m->dir();
    epoch = rt->job().restarts();
    CommitCheckpointLocked(rt, *m);
    // Until the job that lists the new checkpoint is stored, the old ones are what a restart
    // resumes from: they stay.
    if (absl::Status s = lock.Commit(); !s.ok()) return s;
    resp.set_committed(true);
  }
  // Verified now, off the lock, so that a restart finds the verdict waiting.
  verifier_.Check(committed, epoch);
  // Deleting old checkpoints can take a while: outside the lock.
  if (absl::Status s = ckpt::ApplyRetention(root, keep); !s.ok()) {
    GS_LOG(WARNING) << "checkpoint retention in " << root << ": " << s;
  }
  return resp;
}

void Coordinator::CommitCheckpointLocked(JobRuntime* rt, const v1::CheckpointManifest& m) {
  rt->CommitCheckpoint(m);
  AddEventLocked(rt, "CheckpointCommitted",
                 absl::StrFormat("step %d: %.1f MiB from %d ranks in %.2fs (%s)", m.step(), m.total_bytes() / 1048576.0,
                                 m.world_size(), m.duration_seconds(), m.dir()));
  TouchLocked(rt);
  if (rt->generation()->scale_up_requested() && !rt->stopping()) {
    RescaleLocked(rt);
    ScheduleLocked();
  }
}

absl::StatusOr<v1::Job> Coordinator::RequestCheckpoint(const std::string& name) {
  StateLock lock(this);
  JobRuntime* rt = FindJobLocked(name);
  if (rt == nullptr) return absl::NotFoundError(absl::StrCat("job ", name, " not found"));
  if (rt->state() != v1::RUNNING) {
    return PreconditionLocked(*rt, absl::StrCat("job ", rt->id(), " is ", v1::JobState_Name(rt->state()),
                                                "; only a running job can checkpoint"));
  }
  const std::string id = rt->id();
  // One request stands until a checkpoint is committed: asking again changes nothing, writes
  // nothing and adds no event (a flood of requests cannot push the job's history out).
  if (rt->checkpoint_requested()) return StoredJob(id);
  rt->RequestCheckpoint();
  AddEventLocked(rt, "CheckpointRequested", "at the next step boundary");
  TouchLocked(rt);
  if (absl::Status s = lock.Commit(); !s.ok()) return s;
  return StoredJob(id);
}

namespace {

// Whether the job's newest checkpoint is of its current generation and was committed at or after
// `since`.
bool CommittedSince(const JobRuntime& rt, absl::Time since) {
  if (rt.job().checkpoints().empty()) return false;
  const v1::CheckpointManifest& newest = *rt.job().checkpoints().rbegin();
  return newest.generation() == rt.job().generation() &&
         absl::FromUnixNanos(google::protobuf::util::TimeUtil::TimestampToNanoseconds(newest.commit_time())) >= since;
}

}  // namespace

int Coordinator::CheckpointAllRunning(absl::Duration timeout, absl::Time since) {
  if (since == absl::InfinitePast()) since = options_.clock();
  // Commits per running job before the request; the jobs saved since the signal need none.
  std::map<std::string, int64_t> before;
  std::vector<std::string> saved;
  {
    StateLock lock(this);
    for (auto& [id, rt] : jobs_) {
      if (rt.state() != v1::RUNNING) continue;
      if (CommittedSince(rt, since)) {
        saved.push_back(id);
        continue;
      }
      rt.RequestCheckpoint();
      AddEventLocked(&rt, "CheckpointRequested", "the coordinator is stopping (preemption)");
      TouchLocked(&rt);
      before[id] = rt.checkpoints_committed();
    }
  }
  // The requests are stored by now; waiting needs the lock only, and writes nothing.
  {
    absl::MutexLock lock(&mu_);
    auto all_done = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      for (const auto& [id, n] : before) {
        const JobRuntime& rt = jobs_.at(id);
        if (rt.checkpoints_committed() == n && rt.state() == v1::RUNNING) return false;
      }
      return true;
    };
    mu_.AwaitWithTimeout(absl::Condition(&all_done), timeout);
    for (const auto& [id, n] : before) {
      if (jobs_.at(id).checkpoints_committed() > n) saved.push_back(id);
    }
  }
  // Each job that committed its checkpoint is preempted, not failed, when its generation ends
  // with this coordinator (RecoverLocked, the adoption's timeout).
  StateLock lock(this);
  int noted = 0;
  for (const std::string& id : saved) {
    JobRuntime& rt = jobs_.at(id);
    if (rt.state() != v1::RUNNING) continue;
    rt.NotePreempted(options_.clock());
    TouchLocked(&rt);
    ++noted;
  }
  return noted;
}

}  // namespace gradsync::coordinator

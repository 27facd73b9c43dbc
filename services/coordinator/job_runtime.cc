#include "job_runtime.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/time_util.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/core/log.h"
#include "gradsync/core/terminal_text.h"
#include "gradsync/spec/confined_path.h"
#include "gradsync/spec/job_paths.h"
#include "gradsync/spec/job_spec.h"

namespace gradsync::coordinator {

using google::protobuf::util::TimeUtil;

namespace {

constexpr size_t kMaxEvents = 1000;

google::protobuf::Timestamp ToProto(absl::Time t) { return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t)); }

}  // namespace

int MinWorkers(const v1::JobSpec& spec) {
  // Jobs stored before elastic ranges existed have neither field.
  return spec.training().min_workers() > 0 ? spec.training().min_workers() : spec.training().world_size();
}

int MaxWorkers(const v1::JobSpec& spec) {
  return spec.training().max_workers() > 0 ? spec.training().max_workers() : spec.training().world_size();
}

bool JobRuntime::ended() const {
  return job_.state() == v1::SUCCEEDED || job_.state() == v1::FAILED || job_.state() == v1::CANCELLED;
}

void JobRuntime::AddEvent(const std::string& type, const std::string& message, absl::Time now) {
  auto* events = job_.mutable_events();
  if (static_cast<size_t>(events->size()) >= kMaxEvents) events->DeleteSubrange(0, 1);
  v1::JobEvent* e = events->Add();
  *e->mutable_time() = ToProto(now);
  e->set_type(type);
  e->set_message(message);
  // Events quote what ranks reported (their errors): never raw into the coordinator's log.
  GS_LOG(INFO) << "job " << job_.id() << " " << type << ": " << TerminalSafe(message);
}

void JobRuntime::Touch(absl::Time now) {
  ++version_;
  *job_.mutable_update_time() = ToProto(now);
}

bool JobRuntime::SetReason(const std::string& reason) {
  if (job_.state_reason() == reason) return false;
  job_.set_state_reason(reason);
  return true;
}

void JobRuntime::Finish(v1::JobState state, const std::string& reason, absl::Time now) {
  job_.set_state(state);
  job_.set_state_reason(reason);
  *job_.mutable_end_time() = ToProto(now);
  stop_deadline_.reset();
  if (state == v1::SUCCEEDED || job_.has_result()) return;
  // No rank reported a result: what the job reached, from the furthest report of it.
  v1::JobResult r = reached_;
  const v1::JobProgress& p = job_.progress();
  if (p.step() > r.global_step()) {
    r.set_global_step(p.step());
    r.set_final_loss(p.loss());
  }
  if (r.initial_loss() == 0 && !job_.checkpoints().empty()) {
    r.set_initial_loss(job_.checkpoints().rbegin()->initial_loss());
  }
  if (r.global_step() > 0) *job_.mutable_result() = r;
}

void JobRuntime::SetProgress(const v1::JobProgress& progress) {
  // A new generation reports no validation loss until it evaluates: the last one known stays.
  const v1::JobProgress before = job_.progress();
  *job_.mutable_progress() = progress;
  if (!progress.has_validation_loss() && before.has_validation_loss()) {
    job_.mutable_progress()->set_validation_loss(before.validation_loss());
    job_.mutable_progress()->set_validation_step(before.validation_step());
  }
  if (progress.step() == 1) reached_.set_initial_loss(progress.loss());
}

void JobRuntime::NoteReached(const v1::JobResult& reached) {
  if (reached.global_step() < reached_.global_step()) return;
  const double initial = reached_.initial_loss();
  reached_ = reached;
  if (reached_.initial_loss() == 0) reached_.set_initial_loss(initial);
}

int JobRuntime::restart_budget() const { return spec::MaxRestarts(job_.spec().training()); }

void JobRuntime::Restart(const std::string& reason) {
  job_.set_restarts(job_.restarts() + 1);
  Requeue(reason);
}

void JobRuntime::Requeue(const std::string& reason) {
  job_.set_state(v1::RESTARTING);
  job_.set_state_reason(reason);
}

namespace {

std::string PreemptedMessage(int generation, int64_t step) {
  return absl::StrFormat("generation %d checkpointed at step %d as the coordinator stopped", generation, step);
}

}  // namespace

void JobRuntime::NotePreempted(absl::Time now) {
  if (job_.checkpoints().empty()) return;
  AddEvent("Preempted", PreemptedMessage(job_.generation(), job_.checkpoints().rbegin()->step()), now);
}

bool JobRuntime::Preempted() const {
  if (job_.checkpoints().empty()) return false;
  for (auto e = job_.events().rbegin(); e != job_.events().rend(); ++e) {
    if (e->type() == "Preempted") {
      return e->message() == PreemptedMessage(job_.generation(), job_.checkpoints().rbegin()->step());
    }
  }
  return false;
}

int JobRuntime::AddSetupFailure(const std::string& worker_id) {
  setup_failed_on_.insert(worker_id);
  return static_cast<int>(setup_failed_on_.size());
}

Generation* JobRuntime::RunningGeneration(int number) {
  const bool running = generation_ != nullptr && generation_->number() == number && job_.state() == v1::RUNNING;
  return running ? generation_.get() : nullptr;
}

Generation& JobRuntime::StartGeneration(std::vector<std::string> ranks, absl::Time now) {
  job_.set_generation(job_.generation() + 1);
  if (!job_.has_start_time()) *job_.mutable_start_time() = ToProto(now);
  job_.set_state(v1::RUNNING);
  job_.set_state_reason("");
  generation_ = std::make_unique<Generation>(job_.id(), job_.generation(), std::move(ranks), now);
  return *generation_;
}

Generation& JobRuntime::KeepGeneration(const v1::GenerationRecord& record, absl::Time now, absl::Time deadline) {
  std::vector<std::string> ranks;
  for (const v1::RankHolder& holder : record.ranks()) ranks.push_back(holder.worker_id());
  generation_ = std::make_unique<Generation>(job_.id(), job_.generation(), std::move(ranks), now);
  generation_->AwaitAdoption(std::make_unique<Adoption>(job_.id(), record, now, deadline));
  return *generation_;
}

bool JobRuntime::ReadyToStart(const PoolView& pool, absl::Time now, absl::Duration last_call, std::string* reason) {
  const size_t min = static_cast<size_t>(MinWorkers(job_.spec()));
  const size_t max = static_cast<size_t>(MaxWorkers(job_.spec()));
  if (pool.idle >= max) return true;
  // Survivors of the previous generation come back within a heartbeat or two; a generation started
  // without them would shrink for nothing.
  if (pool.returning > 0) {
    *reason = absl::StrFormat("waiting for %d workers of generation %d to return", pool.returning, job_.generation());
    return false;
  }
  if (pool.idle < min) {
    quorum_since_.reset();
    *reason = min == max ? absl::StrFormat("waiting for %d idle workers: %d idle of %d registered", min, pool.idle,
                                           pool.registered)
                         : absl::StrFormat("waiting for %d to %d idle workers: %d idle of %d registered", min, max,
                                           pool.idle, pool.registered);
    return false;
  }
  // A job that ran before goes on at once: its workers are back, and waiting delays recovery.
  if (job_.generation() > 0) return true;
  if (!quorum_since_.has_value()) quorum_since_ = now;
  if (now - *quorum_since_ >= last_call) return true;
  *reason = absl::StrFormat("%d of %d to %d workers idle; starting within %s unless more join", pool.idle, min, max,
                            absl::FormatDuration(last_call));
  return false;
}

std::string JobRuntime::Dir(const std::string& artifact_root) const {
  const std::filesystem::path own = std::filesystem::path(artifact_root) / job_.id();
  const std::string& sub = job_.spec().checkpoint().dir();
  return (sub.empty() || !spec::IsCheckpointSubdir(sub) ? own : own / sub).string();
}

int JobRuntime::keep() const {
  const v1::CheckpointSpec& c = job_.spec().checkpoint();
  return c.has_keep() ? std::max(1, c.keep()) : spec::kDefaultCheckpointKeep;
}

void JobRuntime::CommitCheckpoint(const v1::CheckpointManifest& m) {
  *job_.add_checkpoints() = m;
  while (job_.checkpoints_size() > keep()) job_.mutable_checkpoints()->DeleteSubrange(0, 1);
  checkpoint_requested_ = false;
  ++checkpoints_committed_;
  checkpoint_bytes_total_ += m.total_bytes();
}

bool JobRuntime::ResumeVerified(const std::string& checkpoint_root, CheckpointVerifier& verifier, std::string* reason) {
  for (auto it = job_.checkpoints().rbegin(); it != job_.checkpoints().rend(); ++it) {
    if (!spec::PathIsWithin(it->dir(), checkpoint_root)) continue;  // ResumePoint drops it
    const CheckpointVerifier::Result r = verifier.Check(it->dir(), job_.restarts());
    if (r.verdict == CheckpointVerifier::Verdict::kVerified) return true;
    if (r.verdict == CheckpointVerifier::Verdict::kPending) {
      *reason = absl::StrCat("verifying the checkpoint at step ", it->step(), " before resuming from it");
      return false;
    }
  }
  return true;
}

std::optional<v1::CheckpointManifest> JobRuntime::ResumePoint(const std::string& checkpoint_root,
                                                              CheckpointVerifier& verifier, absl::Time now) {
  auto* list = job_.mutable_checkpoints();
  while (!list->empty()) {
    const v1::CheckpointManifest& newest = *list->rbegin();
    if (!spec::PathIsWithin(newest.dir(), checkpoint_root)) {
      // Recorded before jobs kept to their own directory: neither read nor renamed.
      AddEvent("CheckpointSkipped",
               absl::StrCat("checkpoint at step ", newest.step(), " in ", newest.dir(), " lies outside the job's ",
                            checkpoint_root),
               now);
      list->RemoveLast();
      continue;
    }
    const absl::Status ok = verifier.CheckNow(newest.dir(), job_.restarts()).status;
    if (ok.ok()) return newest;
    const int64_t bad = newest.step();
    // Set the directory aside under a name that is no step directory: retention and `checkpoint
    // list` skip it, a new checkpoint of the same step gets a fresh directory, and the damaged
    // files stay for inspection.
    std::error_code ec;
    const std::string aside = absl::StrCat(newest.dir(), ".corrupt-g", job_.generation());
    std::filesystem::rename(newest.dir(), aside, ec);
    list->RemoveLast();
    AddEvent("CheckpointCorrupt",
             absl::StrCat("checkpoint at step ", bad, " failed verification (", ok.message(), "); ",
                          ec ? "" : absl::StrCat("set aside as ", aside, "; "),
                          list->empty() ? std::string("no older checkpoint: starting from the job seed")
                                        : absl::StrCat("using the one at step ", list->rbegin()->step())),
             now);
  }
  return ContinuationPoint(verifier, now);
}

std::optional<v1::CheckpointManifest> JobRuntime::ContinuationPoint(CheckpointVerifier& verifier, absl::Time now) {
  if (!job_.has_continued_from()) return std::nullopt;
  const v1::CheckpointManifest& from = job_.continued_from();
  // The other job's checkpoint: read, never renamed or retained here.
  const absl::Status ok = verifier.CheckNow(from.dir(), job_.restarts()).status;
  if (ok.ok()) return from;
  AddEvent("ContinuationCorrupt",
           absl::StrCat("the checkpoint at step ", from.step(), " this job continues (", from.dir(),
                        ") failed verification (", ok.message(), "): starting from the job seed"),
           now);
  job_.clear_continued_from();
  return std::nullopt;
}

}  // namespace gradsync::coordinator

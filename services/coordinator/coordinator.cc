// The coordinator's lifecycle (recovery, the lease thread, shutdown), the StateLock that keeps
// database writes out of its lock, and the job API: create, get, list, cancel, watch.
#include "coordinator.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/time_util.h"
#include "gradsync/core/log.h"
#include "gradsync/core/rng.h"
#include "gradsync/spec/job_paths.h"
#include "gradsync/spec/job_spec.h"
#include "continuation.h"

namespace gradsync::coordinator {

using google::protobuf::util::TimeUtil;

namespace {

constexpr int kDefaultPageSize = 50;
constexpr int kMaxPageSize = 1000;

// Lowercase letters, digits and dashes from a job name, for readable ids.
std::string Slug(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!out.empty() && out.back() != '-') {
      out.push_back('-');
    }
    if (out.size() >= 24) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "job" : out;
}

absl::Status JobNotFound(const std::string& name) {
  return absl::NotFoundError(absl::StrCat("job ", name, " not found"));
}

// Resolves the spec's data paths inside the operator's data roots (none to check for synthetic
// data).
absl::Status ConfineDataPaths(const std::vector<std::string>& data_roots, v1::JobSpec* spec) {
  if (spec::DataPaths(*spec).empty()) return absl::OkStatus();
  absl::StatusOr<spec::ConfinedRoots> roots = spec::ConfinedRoots::Open(data_roots, "data root");
  if (!roots.ok()) return roots.status();
  return spec::ConfineDataPaths(*roots, spec);
}

// Resolves model.initFrom inside the data roots or the artifact root (weights another job left).
absl::Status ConfineInitFrom(const std::vector<std::string>& data_roots, const std::string& artifact_root,
                             v1::JobSpec* spec) {
  if (spec->model().init_from().empty()) return absl::OkStatus();
  std::vector<std::string> dirs = data_roots;
  if (!artifact_root.empty()) dirs.push_back(artifact_root);
  absl::StatusOr<spec::ConfinedRoots> roots = spec::ConfinedRoots::Open(dirs, "data or artifact root");
  if (!roots.ok()) return roots.status();
  return spec::ConfineInitFrom(*roots, spec);
}

// Resolves a script job's working directory inside the data roots: the command runs there.
absl::Status ConfineScriptDir(const std::vector<std::string>& data_roots, v1::JobSpec* spec) {
  if (!spec->has_script()) return absl::OkStatus();
  absl::StatusOr<spec::ConfinedRoots> roots = spec::ConfinedRoots::Open(data_roots, "data root");
  if (!roots.ok()) return roots.status();
  return spec::ConfineScriptDir(*roots, spec);
}

// Whether a directory of that name is already in the artifact root (left by an earlier
// coordinator): a new job must not share it.
bool ArtifactDirExists(const std::string& artifact_root, const std::string& id) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(artifact_root) / id, ec);
}

}  // namespace

std::string JobIdFromName(const std::string& name) { return absl::StartsWith(name, "jobs/") ? name.substr(5) : name; }

// The lock annotations of the constructor and destructor tell callers what they do; the analysis
// cannot follow mu_ through c_, hence no analysis of their bodies.
Coordinator::StateLock::StateLock(Coordinator* c) ABSL_NO_THREAD_SAFETY_ANALYSIS : c_(c) { c_->mu_.Lock(); }

absl::Status Coordinator::StateLock::Commit() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  committed_ = true;
  std::vector<JobSnapshot> changes = c_->TakeChangesLocked();
  c_->mu_.Unlock();
  return c_->writer_.Write(std::move(changes));
}

Coordinator::StateLock::~StateLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (!committed_) Commit().IgnoreError();
}

namespace {

// The journal at `path`, or none (in memory only) when `path` is empty or it cannot be opened.
std::unique_ptr<JobLogJournal> OpenJobLogJournal(const std::string& path) {
  if (path.empty()) return nullptr;
  absl::StatusOr<std::unique_ptr<JobLogJournal>> journal = JobLogJournal::Open(path);
  if (journal.ok()) return *std::move(journal);
  GS_LOG(ERROR) << journal.status() << "; the job logs are kept in memory only";
  return nullptr;
}

}  // namespace

Coordinator::Coordinator(CoordinatorOptions options, std::unique_ptr<JobStore> store)
    : options_(std::move(options)),
      job_logs_(JobLogBounds{}, OpenJobLogJournal(options_.job_log_file)),
      writer_(std::move(store)) {
  absl::StatusOr<std::vector<v1::Job>> stored = writer_.LoadAll();
  if (!stored.ok()) {
    // The store checked every row when it opened, so this is a disk failing under it. Running
    // without the jobs would schedule over them: stop instead.
    GS_LOG(ERROR) << "cannot load the stored jobs: " << stored.status();
    std::abort();
  }
  absl::StatusOr<std::map<std::string, v1::GenerationRecord>> running = writer_.LoadGenerations();
  if (!running.ok()) {
    // Without the records no generation can be adopted; the jobs themselves are safe.
    GS_LOG(ERROR) << "cannot load the running generations, running jobs restart: " << running.status();
    running = std::map<std::string, v1::GenerationRecord>();
  }
  StateLock lock(this);
  RecoverLocked(*std::move(stored), *running);
}

void Coordinator::RecoverLocked(std::vector<v1::Job> stored,
                                const std::map<std::string, v1::GenerationRecord>& running) {
  int kept = 0;
  for (v1::Job& job : stored) {
    const std::string id = job.id();
    JobRuntime& rt = jobs_.try_emplace(id, std::move(job)).first->second;
    if (rt.ended()) continue;
    if (rt.state() == v1::RUNNING) {
      // Its workers may still be training: they come back with their ranks (adoption.h).
      const auto record = running.find(id);
      if (KeepGenerationLocked(&rt, record == running.end() ? nullptr : &record->second)) {
        ++kept;
        continue;
      }
    }
    if (rt.state() == v1::RUNNING || rt.state() == v1::RESTARTING) {
      // A generation that cannot be adopted (no record of it, or adoption is off) ends: its
      // workers are refused their ranks when they register again, and the job starts a new one.
      // Its reason stays until scheduling gives one.
      // A preempted one lost nothing: it is not counted as a restart.
      const std::string reason = rt.job().state_reason();
      const bool preempted = rt.state() == v1::RUNNING && rt.Preempted();
      if (preempted) {
        rt.Requeue(reason);
      } else {
        rt.Restart(reason);
      }
      AddEventLocked(&rt, "CoordinatorRestarted",
                     absl::StrCat("generation ", rt.job().generation(), " abandoned",
                                  preempted ? " after its preemption checkpoint (not counted as a restart)" : "",
                                  "; waiting for ", MinWorkers(rt.spec()), " workers to form the next"));
      TouchLocked(&rt);
    }
    queue_.push_back(id);
  }
  if (!jobs_.empty()) {
    GS_LOG(INFO) << "recovered " << jobs_.size() << " jobs, " << queue_.size() << " to schedule, " << kept
                 << " running generations awaiting their workers";
  }
}

Coordinator::~Coordinator() { Shutdown(); }

void Coordinator::Start() {
  lease_thread_ = std::thread([this] {
    const absl::Duration tick = std::max(absl::Milliseconds(50), options_.heartbeat_interval / 2);
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return shutdown_; };
        if (mu_.AwaitWithTimeout(absl::Condition(&stop), tick)) return;
      }
      CheckLeases();
      RetryStoreWrites();
    }
  });
}

void Coordinator::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
    assignment_waits_.WakeAll();
  }
  kv_.Shutdown();
  writer_.stored().Shutdown();
  if (lease_thread_.joinable()) lease_thread_.join();
  verifier_.Shutdown();
}

void Coordinator::OnCheckpointVerdict() {
  StateLock lock(this);
  if (!shutdown_) ScheduleLocked();
}

absl::Status Coordinator::StoreHealth() { return writer_.stored().health(); }

void Coordinator::OnStoreHealthChange(std::function<void(const absl::Status&)> listener) {
  writer_.stored().OnHealthChange(std::move(listener));
}

void Coordinator::RetryStoreWrites() { writer_.Retry(); }

std::string Coordinator::NewIdLocked(const std::string& prefix) {
  const uint64_t r = Mix64(static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) + ++id_counter_);
  return absl::StrFormat("%s-%05x", prefix, r & 0xfffff);
}

JobRuntime* Coordinator::FindJobLocked(const std::string& name) {
  auto it = jobs_.find(JobIdFromName(name));
  return it == jobs_.end() ? nullptr : &it->second;
}

v1::Job Coordinator::StoredJob(const std::string& id) {
  std::optional<std::pair<v1::Job, int64_t>> stored = writer_.stored().Get(id);
  return stored.has_value() ? std::move(stored->first) : v1::Job();
}

absl::Status Coordinator::PreconditionLocked(const JobRuntime& rt, const std::string& message) {
  // A state that differs from the stored one while writes succeed is being written right now.
  const std::optional<std::pair<v1::Job, int64_t>> stored = writer_.stored().Get(rt.id());
  if (stored.has_value() && stored->first.state() != rt.state()) {
    if (absl::Status health = writer_.stored().health(); !health.ok()) return health;
  }
  return absl::FailedPreconditionError(message);
}

void Coordinator::TouchLocked(JobRuntime* rt) {
  rt->Touch(options_.clock());
  changed_.insert(rt->id());
}

void Coordinator::AddEventLocked(JobRuntime* rt, const std::string& type, const std::string& message) {
  rt->AddEvent(type, message, options_.clock());
}

std::vector<JobSnapshot> Coordinator::TakeChangesLocked() {
  std::vector<JobSnapshot> changes;
  changes.reserve(changed_.size());
  for (const std::string& id : changed_) {
    const JobRuntime& rt = jobs_.at(id);
    changes.push_back({rt.job(), rt.version(), GenerationRecordLocked(rt)});
  }
  changed_.clear();
  return changes;
}

absl::StatusOr<v1::Job> Coordinator::NewJob(v1::JobSpec spec) {
  absl::MutexLock lock(&mu_);
  if (shutdown_) return absl::UnavailableError("coordinator is shutting down");
  std::string id;
  do {
    id = NewIdLocked(Slug(spec.name()));
  } while (jobs_.count(id) > 0 || ArtifactDirExists(options_.artifact_root, id));
  v1::Job job;
  job.set_id(id);
  job.set_name(absl::StrCat("jobs/", id));
  *job.mutable_spec() = std::move(spec);
  job.set_state(v1::PENDING);
  *job.mutable_create_time() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(options_.clock()));
  *job.mutable_update_time() = job.create_time();
  return job;
}

absl::StatusOr<v1::Job> Coordinator::CreateJob(v1::JobSpec spec) {
  auto normalized = spec::Normalize(std::move(spec));
  if (!normalized.ok()) return normalized.status();
  absl::StatusOr<std::optional<spec::JobPlan>> plan = PlanWithinBudget(*normalized, options_.max_model_bytes);
  if (!plan.ok()) return plan.status();
  if (absl::Status s = ConfineDataPaths(options_.data_roots, &*normalized); !s.ok()) return s;
  if (absl::Status s = ConfineInitFrom(options_.data_roots, options_.artifact_root, &*normalized); !s.ok()) return s;
  if (absl::Status s = ConfineScriptDir(options_.data_roots, &*normalized); !s.ok()) return s;
  absl::StatusOr<std::optional<v1::CheckpointManifest>> continues = ContinuationOf(*normalized);
  if (!continues.ok()) return continues.status();
  absl::MutexLock creating(&create_mu_);
  absl::StatusOr<v1::Job> job = NewJob(*std::move(normalized));
  if (!job.ok()) return job.status();
  if (continues->has_value()) *job->mutable_continued_from() = **continues;
  // The job exists once it is stored; until then no other call can see it.
  if (absl::Status s = writer_.Insert(*job); !s.ok()) return s;
  const std::string id = job->id();
  StateLock lock(this);
  JobRuntime& rt = jobs_.try_emplace(id, *std::move(job)).first->second;
  AddEventLocked(&rt, "Created", absl::StrCat("world size ", rt.spec().training().world_size()));
  if (plan->has_value()) {
    if (const std::string notice = spec::IgnoredBuffersNotice((*plan)->ignore); !notice.empty()) {
      AddEventLocked(&rt, "IgnoredBuffers", notice);
    }
  }
  if (rt.job().has_continued_from()) {
    const v1::CheckpointManifest& from = rt.job().continued_from();
    AddEventLocked(&rt, "Continues",
                   absl::StrCat("continues ", rt.spec().training().resume_from(), " from its checkpoint at step ",
                                from.step(), " (epoch ", from.epoch(), ", sample ", from.cursor(), " of it)"));
  }
  queue_.push_back(id);
  TouchLocked(&rt);
  ScheduleLocked();
  // The job exists: if what scheduling changed cannot be stored, the caller still gets the job as
  // stored (and the change is written again later), not an error that invites a second submit.
  lock.Commit().IgnoreError();
  return StoredJob(id);
}

absl::StatusOr<std::optional<v1::CheckpointManifest>> Coordinator::ContinuationOf(const v1::JobSpec& spec) {
  const std::string& from = spec.training().resume_from();
  if (from.empty()) return std::nullopt;
  std::optional<std::pair<v1::Job, int64_t>> previous = writer_.stored().Get(JobIdFromName(from));
  if (!previous.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("training.resumeFrom: no job \"", from, "\" on this coordinator"));
  }
  absl::StatusOr<v1::CheckpointManifest> point = ContinuationPoint(spec, previous->first);
  if (!point.ok()) return point.status();
  return std::optional<v1::CheckpointManifest>(*std::move(point));
}

absl::StatusOr<v1::Job> Coordinator::GetJob(const std::string& name) {
  std::optional<std::pair<v1::Job, int64_t>> stored = writer_.stored().Get(JobIdFromName(name));
  if (!stored.has_value()) return JobNotFound(name);
  return std::move(stored->first);
}

absl::StatusOr<JobArtifacts> Coordinator::Artifacts(const std::string& name) {
  absl::StatusOr<v1::Job> job = GetJob(name);
  if (!job.ok()) return job.status();
  return JobArtifacts(options_.artifact_root, job->id());
}

absl::StatusOr<v1::ListJobsResponse> Coordinator::ListJobs(int page_size, const std::string& page_token) {
  if (page_size < 0) return absl::InvalidArgumentError(absl::StrCat("pageSize: must not be negative, got ", page_size));
  if (page_size == 0) page_size = kDefaultPageSize;
  page_size = std::min(page_size, kMaxPageSize);
  return writer_.stored().List(page_size, page_token);
}

absl::StatusOr<v1::Job> Coordinator::CancelJob(const std::string& name) {
  StateLock lock(this);
  JobRuntime* rt = FindJobLocked(name);
  if (rt == nullptr) return JobNotFound(name);
  if (rt->ended()) {
    return PreconditionLocked(*rt, absl::StrCat("job ", rt->id(), " already ended: ", v1::JobState_Name(rt->state())));
  }
  const Generation* gen = rt->generation();
  const bool stop_first = rt->state() == v1::RUNNING && gen != nullptr && gen->adoption() == nullptr &&
                          options_.cancel_grace > absl::ZeroDuration() && !rt->stopping();
  if (stop_first) {
    // The ranks hear it on their next heartbeat (STOP) and stop at a step boundary, saving the
    // weights; their result ends the job (CompleteLocked), or CheckStopsLocked at the deadline.
    rt->RequestStop(options_.clock() + options_.cancel_grace);
    rt->SetReason("cancelling: the ranks stop at the next step boundary and save the weights");
    AddEventLocked(rt, "CancelRequested",
                   absl::StrCat("the ranks stop at the next step boundary and write the final checkpoint and "
                                "weights; aborted if they have not within ",
                                absl::FormatDuration(options_.cancel_grace)));
    TouchLocked(rt);
  } else {
    FinishLocked(rt, v1::CANCELLED, "Cancelled", "cancelled by request");
    ScheduleLocked();
  }
  const std::string id = rt->id();
  if (absl::Status s = lock.Commit(); !s.ok()) return s;
  return StoredJob(id);
}

absl::StatusOr<std::pair<v1::Job, int64_t>> Coordinator::WaitJobChange(const std::string& name, int64_t seen,
                                                                       absl::Duration timeout) {
  auto change = writer_.stored().WaitChange(JobIdFromName(name), seen, timeout);
  if (absl::IsNotFound(change.status())) return JobNotFound(name);
  return change;
}

void Coordinator::FinishLocked(JobRuntime* rt, v1::JobState state, const std::string& type,
                               const std::string& message) {
  queue_.erase(std::remove(queue_.begin(), queue_.end(), rt->id()), queue_.end());
  EndGenerationLocked(rt, message);
  rt->Finish(state, message, options_.clock());
  AddEventLocked(rt, type, message);
  TouchLocked(rt);
}

void Coordinator::EndGenerationLocked(JobRuntime* rt, const std::string& reason) {
  std::unique_ptr<Generation> ended = rt->EndGeneration();
  if (ended == nullptr) return;
  for (const std::string& wid : ended->ranks()) {
    if (WorkerLease* w = workers_.Find(wid); w != nullptr) w->LeaveGeneration(rt->id(), ended->number(), reason);
  }
  kv_.DropNamespace(ended->kv_namespace());
}

void Coordinator::QueueLocked(const std::string& job_id) {
  if (std::find(queue_.begin(), queue_.end(), job_id) == queue_.end()) queue_.push_back(job_id);
}

}  // namespace gradsync::coordinator

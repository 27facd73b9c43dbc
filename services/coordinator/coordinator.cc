#include "coordinator.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/time_util.h"
#include "gradsync/core/log.h"
#include "gradsync/core/rng.h"
#include "gradsync/ddp/sampler.h"
#include "gradsync/spec/job_spec.h"

namespace gradsync::coordinator {

using google::protobuf::util::TimeUtil;

namespace {

constexpr int kDefaultPageSize = 50;
constexpr int kMaxPageSize = 1000;
constexpr size_t kMaxEvents = 1000;

bool IsTerminal(v1::JobState s) {
  return s == v1::SUCCEEDED || s == v1::FAILED || s == v1::CANCELLED;
}

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

}  // namespace

std::string JobIdFromName(const std::string& name) {
  return absl::StartsWith(name, "jobs/") ? name.substr(5) : name;
}

Coordinator::Coordinator(CoordinatorOptions options, std::unique_ptr<JobStore> store)
    : options_(std::move(options)), store_(std::move(store)) {
  absl::MutexLock lock(&mu_);
  RecoverLocked();
}

void Coordinator::RecoverLocked() {
  for (v1::Job& job : store_->List("", std::numeric_limits<int>::max())) {
    JobRuntime& rt = jobs_[job.id()];
    rt.job = std::move(job);
    if (IsTerminal(rt.job.state())) continue;
    if (rt.job.state() == v1::RUNNING || rt.job.state() == v1::RESTARTING) {
      // Its workers will register again; they cannot resume a generation the coordinator no
      // longer tracks, so the job starts a new one.
      rt.job.set_state(v1::RESTARTING);
      rt.job.set_restarts(rt.job.restarts() + 1);
      AddEventLocked(&rt, "CoordinatorRestarted",
                     absl::StrCat("generation ", rt.job.generation(), " abandoned; waiting for ",
                                  MinWorkers(rt.job.spec()), " workers to form the next"));
      TouchLocked(&rt);
    }
    queue_.push_back(rt.job.id());
  }
  if (!jobs_.empty()) {
    GS_LOG(INFO) << "recovered " << jobs_.size() << " jobs, " << queue_.size() << " to schedule";
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
    }
  });
}

void Coordinator::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
  }
  kv_.Shutdown();
  if (lease_thread_.joinable()) lease_thread_.join();
}

std::string Coordinator::NewIdLocked(const std::string& prefix) {
  const uint64_t r = Mix64(static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) + ++id_counter_);
  return absl::StrFormat("%s-%05x", prefix, r & 0xfffff);
}

Coordinator::JobRuntime* Coordinator::FindJobLocked(const std::string& name) {
  auto it = jobs_.find(JobIdFromName(name));
  return it == jobs_.end() ? nullptr : &it->second;
}

void Coordinator::TouchLocked(JobRuntime* rt) {
  ++rt->version;
  *rt->job.mutable_update_time() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(options_.clock()));
  absl::Status s = store_->Update(rt->job);
  if (!s.ok()) {
    GS_LOG(ERROR) << "persisting job " << rt->job.id() << ": " << s;
  }
}

void Coordinator::AddEventLocked(JobRuntime* rt, const std::string& type, const std::string& message) {
  auto* events = rt->job.mutable_events();
  if (static_cast<size_t>(events->size()) >= kMaxEvents) events->DeleteSubrange(0, 1);
  v1::JobEvent* e = events->Add();
  *e->mutable_time() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(options_.clock()));
  e->set_type(type);
  e->set_message(message);
  GS_LOG(INFO) << "job " << rt->job.id() << " " << type << ": " << message;
}

absl::StatusOr<v1::Job> Coordinator::CreateJob(v1::JobSpec spec) {
  auto normalized = spec::Normalize(std::move(spec));
  if (!normalized.ok()) return normalized.status();
  absl::MutexLock lock(&mu_);
  if (shutdown_) return absl::UnavailableError("coordinator is shutting down");
  std::string id;
  do {
    id = NewIdLocked(Slug(normalized->name()));
  } while (jobs_.count(id) > 0);
  JobRuntime& rt = jobs_[id];
  rt.job.set_id(id);
  rt.job.set_name(absl::StrCat("jobs/", id));
  *rt.job.mutable_spec() = *std::move(normalized);
  rt.job.set_state(v1::PENDING);
  *rt.job.mutable_create_time() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(options_.clock()));
  *rt.job.mutable_update_time() = rt.job.create_time();
  if (absl::Status s = store_->Insert(rt.job); !s.ok()) {
    jobs_.erase(id);
    return s;
  }
  AddEventLocked(&rt, "Created", absl::StrCat("world size ", rt.job.spec().training().world_size()));
  queue_.push_back(id);
  TouchLocked(&rt);
  ScheduleLocked();
  return rt.job;
}

absl::StatusOr<v1::Job> Coordinator::GetJob(const std::string& name) {
  absl::MutexLock lock(&mu_);
  JobRuntime* rt = FindJobLocked(name);
  if (rt == nullptr) return absl::NotFoundError(absl::StrCat("job ", name, " not found"));
  return rt->job;
}

absl::StatusOr<v1::ListJobsResponse> Coordinator::ListJobs(int page_size, const std::string& page_token) {
  if (page_size < 0) return absl::InvalidArgumentError(absl::StrCat("pageSize: must not be negative, got ", page_size));
  if (page_size == 0) page_size = kDefaultPageSize;
  page_size = std::min(page_size, kMaxPageSize);
  absl::MutexLock lock(&mu_);
  if (!page_token.empty() && jobs_.count(page_token) == 0) {
    return absl::InvalidArgumentError(absl::StrCat("pageToken: unknown token \"", page_token, "\""));
  }
  v1::ListJobsResponse resp;
  std::vector<v1::Job> page = store_->List(page_token, page_size + 1);
  const bool more = static_cast<int>(page.size()) > page_size;
  if (more) page.pop_back();
  for (auto& j : page) *resp.add_jobs() = std::move(j);
  if (more) resp.set_next_page_token(resp.jobs().rbegin()->id());
  return resp;
}

absl::StatusOr<v1::Job> Coordinator::CancelJob(const std::string& name) {
  absl::MutexLock lock(&mu_);
  JobRuntime* rt = FindJobLocked(name);
  if (rt == nullptr) return absl::NotFoundError(absl::StrCat("job ", name, " not found"));
  if (IsTerminal(rt->job.state())) {
    return absl::FailedPreconditionError(absl::StrCat("job ", rt->job.id(), " already ended: ",
                                                      v1::JobState_Name(rt->job.state())));
  }
  FinishLocked(rt, v1::CANCELLED, "Cancelled", "cancelled by request");
  ScheduleLocked();
  return rt->job;
}

absl::StatusOr<std::pair<v1::Job, int64_t>> Coordinator::WaitJobChange(const std::string& name,
                                                                       int64_t seen,
                                                                       absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  JobRuntime* rt = FindJobLocked(name);
  if (rt == nullptr) return absl::NotFoundError(absl::StrCat("job ", name, " not found"));
  auto changed = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return shutdown_ || rt->version > seen; };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  if (shutdown_) return absl::UnavailableError("coordinator is shutting down");
  return std::make_pair(rt->job, rt->version);
}

void Coordinator::FinishLocked(JobRuntime* rt, v1::JobState state, const std::string& type,
                               const std::string& message) {
  queue_.erase(std::remove(queue_.begin(), queue_.end(), rt->job.id()), queue_.end());
  if (rt->generation_active) EndGenerationLocked(rt, message);
  rt->job.set_state(state);
  rt->job.set_state_reason(message);
  AddEventLocked(rt, type, message);
  TouchLocked(rt);
}

void Coordinator::EndGenerationLocked(JobRuntime* rt, const std::string& reason) {
  rt->generation_active = false;
  for (const std::string& wid : rt->ranks) {
    auto it = workers_.find(wid);
    if (it == workers_.end()) continue;
    Worker& w = it->second;
    if (w.job_id != rt->job.id() || w.generation != rt->job.generation()) continue;
    const bool never_started =
        !w.inbox.empty() && w.inbox.back().job_id() == rt->job.id();
    if (never_started) {
      FreeWorkerLocked(&w);
    } else {
      w.abort_reason = reason;
    }
  }
  kv_.DropNamespace(KvNamespaceOf(rt->job.id(), rt->job.generation()));
}

}  // namespace gradsync::coordinator

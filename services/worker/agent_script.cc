// The agent's part in one generation of a script job (JobSpec.script): the ranks meet, the
// command starts as a child with torchrun's environment, its output becomes the rank's job log,
// and its exit is the rank's result. An abort (another rank failed, a worker was lost), a cancel
// or the worker's own shutdown stops the child's whole process group: SIGTERM, then SIGKILL after
// script.stopGraceSeconds.
#include <sys/wait.h>

#include <cstdlib>
#include <deque>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "agent.h"
#include "gradsync/comm/kv_client.h"
#include "gradsync/core/child_process.h"
#include "gradsync/core/log.h"
#include "gradsync/core/shutdown.h"
#include "gradsync/spec/confined_path.h"
#include "gradsync/spec/job_paths.h"
#include "script_child.h"
#include "script_env.h"
#include "script_runtime.h"

namespace gradsync::worker {
namespace {

// How long the ranks wait for each other before their children start: as long as a native
// rendezvous may take.
constexpr absl::Duration kMeetTimeout = absl::Minutes(5);
constexpr absl::Duration kPollInterval = absl::Milliseconds(50);
// What a stopped child's rank needs beyond its grace: draining its output, reporting.
constexpr absl::Duration kStopReportTime = absl::Seconds(5);
// The last lines of stderr a failure report quotes, as torchrun's error summary does.
constexpr size_t kQuotedLines = 5;

// The last few lines a stream wrote; thread-safe.
class LastLines {
 public:
  void Add(std::string_view line) {
    absl::MutexLock lock(&mu_);
    lines_.emplace_back(line.substr(0, 400));
    if (lines_.size() > kQuotedLines) lines_.pop_front();
  }
  std::string Joined() {
    absl::MutexLock lock(&mu_);
    return absl::StrJoin(lines_, " | ");
  }

 private:
  absl::Mutex mu_;
  std::deque<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

// A variable as the child will see it: the spec's script.env first, else the worker's own.
std::string ChildVariable(const v1::ScriptSpec& script, const std::string& name) {
  if (auto it = script.env().find(name); it != script.env().end()) return it->second;
  const char* value = std::getenv(name.c_str());
  return value != nullptr ? value : "";
}

// The child's argv (the program found) and environment.
struct ScriptLaunch {
  ChildSpec child;
  std::string command_text;
};

absl::StatusOr<ScriptLaunch> PrepareLaunch(const v1::Assignment& a, const std::string& dir) {
  const v1::ScriptSpec& script = a.spec().script();
  absl::StatusOr<std::string> program = FindProgram(script.command(0), ChildVariable(script, "PATH"), dir);
  if (!program.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("script.command[0]: ", program.status().message()));
  }
  ScriptLaunch launch;
  launch.child.argv.assign(script.command().begin(), script.command().end());
  launch.child.argv[0] = *program;
  launch.child.working_dir = dir;
  for (const auto& [name, value] : script.env()) launch.child.env.push_back(absl::StrCat(name, "=", value));
  launch.command_text = absl::StrJoin(script.command(), " ");
  return launch;
}

}  // namespace

absl::StatusOr<train::TrainOutcome> Agent::RunScript(const v1::Assignment& a) {
  std::string dir = a.spec().script().working_dir();
  if (!a.data_roots().empty()) {
    absl::StatusOr<spec::ConfinedRoots> roots =
        spec::ConfinedRoots::Open({a.data_roots().begin(), a.data_roots().end()}, "data root");
    if (!roots.ok()) return roots.status();
    absl::StatusOr<std::string> checked = spec::CheckScriptDir(a.spec().script(), *roots);
    if (!checked.ok()) return checked.status();
    dir = *checked;
  }
  absl::StatusOr<ScriptLaunch> launch = PrepareLaunch(a, dir);
  if (!launch.ok()) return launch.status();
  auto kv = comm::NewCoordinatorKvClient(stub_, a.job_id(), a.generation());
  absl::StatusOr<ScriptLayout> layout =
      MeetRanks(kv.get(), a.rank(), a.world_size(), options_.comm_host, kMeetTimeout, &abort_);
  if (!layout.ok()) return layout.status();
  for (std::string& v : TorchrunEnvironment(a, *layout, std::getenv("OMP_NUM_THREADS") != nullptr)) {
    launch->child.env.push_back(std::move(v));
  }
  absl::StatusOr<ScriptRuntime> runtime = CreateRuntime(a);
  if (!runtime.ok()) return runtime.status();
  const char* pythonpath = std::getenv("PYTHONPATH");
  for (std::string& v : runtime->Environment(PythonPackageDir(options_.python_dir), pythonpath ? pythonpath : "")) {
    launch->child.env.push_back(std::move(v));
  }
  return RunChild(a, std::move(launch->child), launch->command_text, &*runtime);
}

absl::StatusOr<ScriptRuntime> Agent::CreateRuntime(const v1::Assignment& a) {
  v1::ScriptRankContext context;
  *context.mutable_assignment() = a;
  context.set_coordinator(options_.coordinator);
  context.set_tls_server_name(options_.coordinator_channel.tls_server_name);
  context.set_metrics(options_.metrics);
  context.set_comm_host(options_.comm_host);
  context.set_sample_log_dir(options_.sample_log_dir);
  ScriptSecrets secrets{session_->value(), options_.coordinator_channel.bearer_token,
                        options_.coordinator_channel.tls_ca_pem};
  absl::MutexLock lock(&mu_);
  context.set_worker_id(worker_id_);
  return ScriptRuntime::Create(context, secrets);
}

absl::StatusOr<train::TrainOutcome> Agent::RunChild(const v1::Assignment& a, ChildSpec child,
                                                    const std::string& command_text, ScriptRuntime* runtime) {
  LastLines last_errors;
  std::shared_ptr<JobLogShipper> log = job_log_;
  const std::string job_id = a.job_id();
  const int rank = a.rank();
  auto on_line = [log, &last_errors, job_id, rank](std::string_view stream, std::string_view line) {
    if (stream == "stderr") last_errors.Add(line);
    if (log != nullptr) log->Add(LogRecord{absl::Now(), LogLevel::kInfo, stream, line, job_id, rank});
  };
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<ScriptChild>> started = ScriptChild::Start(std::move(child), on_line);
  if (!started.ok()) return started.status();
  ScriptChild& process = **started;
  GS_LOG(INFO) << "started " << command_text << " as pid " << process.pid();
  {
    absl::MutexLock lock(&mu_);
    script_ = ScriptActivity{process.pid(), start, command_text};
    script_started_ = true;
    script_runtime_ = runtime;
  }
  absl::Cleanup forget = [this] {
    absl::MutexLock lock(&mu_);
    script_ = ScriptActivity{};
    script_runtime_ = nullptr;
  };
  const absl::Duration grace = absl::Seconds(a.spec().script().stop_grace_seconds());
  // An abort's backstop waits for the stop below, with time to report.
  watchdog_.NeedAtLeast(grace + kStopReportTime);
  std::optional<int> status;
  const char* stopped_by = nullptr;
  while (!(status = process.Poll()).has_value()) {
    if (abort_.load()) stopped_by = "the generation was aborted";
    if (ShutdownRequested()) stopped_by = "the worker is shutting down";
    if (stop_requested_.load()) stopped_by = "the job is cancelled";
    if (stopped_by != nullptr) {
      GS_LOG(WARNING) << "stopping " << command_text << " (pid " << process.pid() << "): " << stopped_by;
      status = process.Stop(grace);
      break;
    }
    absl::SleepFor(kPollInterval);
  }
  process.DrainOutput(absl::Seconds(2));
  const std::string how = DescribeWaitStatus(*status);
  GS_LOG(INFO) << command_text << " " << how;
  if (stopped_by != nullptr && !stop_requested_.load()) {
    return absl::AbortedError(absl::StrCat("the command was stopped (", how, "): ", stopped_by));
  }
  const bool succeeded = WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
  if (!succeeded && stopped_by == nullptr) {
    const std::string quoted = last_errors.Joined();
    return absl::InternalError(
        absl::StrCat("the command ", how, quoted.empty() ? "" : "; its last stderr lines: ", quoted));
  }
  train::TrainOutcome outcome;
  {
    absl::MutexLock lock(&mu_);
    ReadScriptProgressLocked();
    outcome.result = reached_;
  }
  outcome.result.set_world_size(a.world_size());
  outcome.result.set_train_seconds(absl::ToDoubleSeconds(absl::Now() - start));
  return outcome;
}

void Agent::ReadScriptProgressLocked() {
  if (script_runtime_ == nullptr) return;
  const std::optional<v1::ScriptProgress> p = script_runtime_->ReadProgressIfChanged();
  if (!p.has_value()) return;
  current_.set_step(p->progress().step());
  if (current_.rank() == 0) *current_.mutable_progress() = p->progress();
  // What the job reached, for its summary (and reported with a failure).
  reached_.set_global_step(p->progress().step());
  reached_.set_final_loss(p->progress().loss());
  reached_.set_initial_loss(p->initial_loss());
}

}  // namespace gradsync::worker

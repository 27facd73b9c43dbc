#include "gradsync/cluster/local_cluster.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gradsync/cluster/job_log_files.h"
#include "gradsync/cluster/local_cluster_file.h"
#include "gradsync/cluster/local_tokens.h"
#include "gradsync/cluster/own_files.h"
#include "gradsync/core/child_process.h"
#include "gradsync/core/cpu_set.h"
#include "gradsync/device/device.h"

namespace gradsync::cluster {

namespace fs = std::filesystem;

namespace {

// The data roots the coordinator gets: the options', or the current directory.
std::vector<std::string> DataRootsOf(const LocalClusterOptions& options) {
  if (!options.data_roots.empty()) return options.data_roots;
  std::error_code ec;
  return {fs::current_path(ec).string()};
}

}  // namespace

LocalCluster::LocalCluster(LocalClusterOptions options) : options_(std::move(options)) {}

LocalCluster::~LocalCluster() { Stop(); }

std::string LocalCluster::Binaries() const {
  return options_.binary_dir.empty() ? BinaryDir() : options_.binary_dir;
}

std::string LocalCluster::log_dir() const { return (fs::path(options_.state_dir) / "logs").string(); }

absl::Status LocalCluster::StartChild(const std::string& name, std::vector<std::string> argv) {
  Child c;
  c.name = name;
  c.log = (fs::path(log_dir()) / (name + ".log")).string();
  c.argv = argv;
  c.env = name.rfind("worker-", 0) == 0 ? TrainingEnvDefaults() : std::vector<std::string>{};
  auto pid = Spawn({std::move(argv), c.log, c.env});
  if (!pid.ok()) return pid.status();
  c.pid = *pid;
  c.started = absl::Now();
  children_.push_back(std::move(c));
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, std::string>> LocalCluster::AwaitEndpoints(const std::string& path,
                                                                                const std::string& name) const {
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  for (;;) {
    std::vector<std::pair<std::string, std::string>> fields;
    if (fs::exists(path) && ReadJsonFields(path, &fields).ok())
      return std::map<std::string, std::string>(fields.begin(), fields.end());
    if (absl::Status alive = CheckAlive(); !alive.ok()) return alive;
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(name, " did not start within ",
                                                      absl::FormatDuration(options_.start_timeout), "; see ",
                                                      children_.back().log));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

std::string LocalCluster::TokenFlag(const std::string& flag, const std::string& name) const {
  return absl::StrCat("--", flag, "=", token_files_.at(name));
}

absl::Status LocalCluster::Start() {
  // Its tokens and addresses go here: a directory only this user can write, 0700 when new.
  if (absl::Status s = MakeOwnDirectory(options_.state_dir); !s.ok()) return s;
  std::error_code ec;
  fs::create_directories(log_dir(), ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", log_dir(), ": ", ec.message()));
  const fs::path state(options_.state_dir);
  fs::remove(state / "coordinator.json", ec);
  fs::remove(state / "metrics.json", ec);
  RemoveLocalClusterFile(options_.state_dir);
  absl::StatusOr<std::map<std::string, std::string>> tokens = WriteLocalTokens(options_.state_dir);
  if (!tokens.ok()) return tokens.status();
  token_files_ = *std::move(tokens);

  if (absl::Status s = StartCoordinator(); !s.ok()) return s;
  std::string metrics;
  if (options_.with_metrics) {
    absl::StatusOr<std::string> started = StartMetricsService();
    if (!started.ok()) return started.status();
    metrics = *started;
  }
  if (absl::Status s = StartWorkers(metrics); !s.ok()) return s;
  return WriteClusterFile();
}

absl::Status LocalCluster::StartCoordinator() {
  const fs::path state(options_.state_dir);
  absl::Status s = StartChild(
      "coordinator",
      {Binaries() + "/gradsync-coordinator", absl::StrCat("--listen=127.0.0.1:", options_.coordinator_port),
       "--metrics_listen=127.0.0.1:0", absl::StrCat("--rest_listen=127.0.0.1:", options_.rest_port),
       TokenFlag("auth_token_file", kAuthToken), TokenFlag("cluster_token_file", kClusterToken),
       TokenFlag("metrics_token_file", kMetricsToken), "--endpoints_file=" + (state / "coordinator.json").string(),
       "--artifact_root=" + (state / "artifacts").string(), "--data_root=" + absl::StrJoin(DataRootsOf(options_), ","),
       "--state_dir=" + (state / "coordinator").string()});
  if (!s.ok()) return s;
  auto coordinator = AwaitEndpoints((state / "coordinator.json").string(), "coordinator");
  if (!coordinator.ok()) return coordinator.status();
  address_ = (*coordinator)["grpc"];
  PinPorts(children_.back(), {{"--listen=", (*coordinator)["grpc"]},
                              {"--rest_listen=", (*coordinator)["rest"]},
                              {"--metrics_listen=", (*coordinator)["metrics"]}});
  endpoints_["coordinator"] = address_;
  endpoints_["rest"] = (*coordinator)["rest"];
  endpoints_["coordinatorMetrics"] = (*coordinator)["metrics"];
  return absl::OkStatus();
}

absl::StatusOr<std::string> LocalCluster::StartMetricsService() {
  const fs::path state(options_.state_dir);
  absl::Status s = StartChild(
      "metrics",
      {Binaries() + "/gradsync-metrics", "--listen=127.0.0.1:0",
       absl::StrCat("--http_listen=127.0.0.1:", options_.metrics_port), "--api_listen=127.0.0.1:0",
       TokenFlag("cluster_token_file", kClusterToken), TokenFlag("metrics_token_file", kMetricsToken),
       "--endpoints_file=" + (state / "metrics.json").string(), "--state_dir=" + (state / "metrics").string()});
  if (!s.ok()) return s;
  auto m = AwaitEndpoints((state / "metrics.json").string(), "metrics service");
  if (!m.ok()) return m.status();
  PinPorts(children_.back(),
           {{"--listen=", (*m)["grpc"]}, {"--http_listen=", (*m)["http"]}, {"--api_listen=", (*m)["api"]}});
  endpoints_["metrics"] = (*m)["grpc"];
  endpoints_["metricsHttp"] = (*m)["http"];
  endpoints_["metricsApi"] = (*m)["api"];
  return (*m)["grpc"];
}

absl::Status LocalCluster::StartWorkers(const std::string& metrics) {
  const fs::path state(options_.state_dir);
  const int gpus = static_cast<int>(device::ListGpus().size());
  for (int i = 0; i < options_.workers; ++i) {
    absl::StatusOr<device::DeviceRequest> worker_device = LocalWorkerDevice(options_.device, i, gpus);
    if (!worker_device.ok()) return worker_device.status();
    std::vector<std::string> argv = {Binaries() + "/gradsync-worker",
                                     "--coordinator=" + address_,
                                     "--comm_host=127.0.0.1",
                                     absl::StrCat("--name=local", i),
                                     "--device=" + worker_device->ToString(),
                                     "--metrics=" + metrics,
                                     "--metrics_listen=127.0.0.1:0",
                                     "--health_listen=127.0.0.1:0",
                                     TokenFlag("cluster_token_file", kClusterToken),
                                     TokenFlag("metrics_token_file", kMetricsToken),
                                     "--endpoints_file=" + (state / absl::StrCat("worker-", i, ".json")).string(),
                                     "--job_log_dir=" + JobLogDir(options_.state_dir)};
    if (const std::string share = ShareOfAllowedCpus(options_.workers, i); options_.bind_cpus && !share.empty()) {
      argv.push_back("--cpus=" + share);
    }
    if (absl::Status s = StartChild(absl::StrCat("worker-", i), std::move(argv)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<device::DeviceRequest> LocalWorkerDevice(const device::DeviceRequest& device, int index, int gpus) {
  using Kind = device::DeviceRequest::Kind;
  const bool spread = device.kind == Kind::kAuto || (device.kind == Kind::kCuda && device.ordinal < 0);
  if (spread && gpus > 0) return device::DeviceRequest::Gpu(index % gpus);
  if (device.kind != Kind::kCuda) return device::DeviceRequest::Cpu();
  if (std::max(device.ordinal, 0) < gpus) return device;
  return absl::FailedPreconditionError(absl::StrCat("--device ", device.ToString(), ": ", gpus,
                                                    " GPUs are visible on this machine",
                                                    device::BuiltWithCuda() ? "" : " (this build has no CUDA)"));
}

uint64_t LocalCluster::SupervisorStart() const {
  return options_.supervisor_pid > 0 ? ProcessStartTime(options_.supervisor_pid).value_or(0) : 0;
}

absl::Status LocalCluster::WriteClusterFile() const {
  return WriteLocalClusterFile(options_.state_dir, {.endpoints = endpoints_,
                                                    .workers = options_.workers,
                                                    .supervisor_pid = options_.supervisor_pid,
                                                    .supervisor_start = SupervisorStart(),
                                                    .log_dir = log_dir(),
                                                    .pids = pids(),
                                                    .token_files = token_files_,
                                                    .data_roots = DataRootsOf(options_)});
}

void LocalCluster::PinPorts(Child& child, const std::map<std::string, std::string>& flag_to_address) {
  for (std::string& arg : child.argv) {
    for (const auto& [flag, address] : flag_to_address) {
      if (!address.empty() && absl::StartsWith(arg, flag)) arg = flag + address;
    }
  }
}

absl::Status LocalCluster::ScheduleRestart(Child& c, int max_quick_exits, absl::Time now) const {
  const bool quick = now - c.started < options_.healthy_after;
  c.quick_exits = quick ? c.quick_exits + 1 : 0;
  const bool worker = absl::StartsWith(c.name, "worker-");
  if (!worker && c.quick_exits >= max_quick_exits) {
    return absl::UnavailableError(absl::StrCat(c.name, " exited ", c.quick_exits, " times in a row, each within ",
                                               absl::FormatDuration(options_.healthy_after), " of its start; its log ",
                                               c.log, " ends:\n", TailFile(c.log, 15)));
  }
  c.backoff = quick && c.backoff > absl::ZeroDuration() ? std::min(2 * c.backoff, options_.max_restart_backoff)
                                                         : options_.restart_backoff;
  c.restart_at = now + c.backoff;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> LocalCluster::Supervise(int max_quick_exits) {
  std::vector<std::string> restarted;
  const absl::Time now = absl::Now();
  for (Child& c : children_) {
    if (!c.restart_at.has_value()) {
      if (Alive(c.pid)) continue;
      if (absl::Status s = ScheduleRestart(c, max_quick_exits, now); !s.ok()) return s;
    }
    if (now < *c.restart_at) continue;
    auto pid = Spawn({c.argv, c.log, c.env});
    if (!pid.ok()) return pid.status();
    c.pid = *pid;
    c.started = now;
    c.restart_at.reset();
    ++c.restarts;
    restarted.push_back(c.name);
  }
  if (!restarted.empty()) (void)WriteClusterFile();
  return restarted;
}

void LocalCluster::Stop() {
  if (children_.empty()) return;
  // The coordinator first: on SIGTERM it has running jobs checkpoint while their workers still
  // run (preemption). Then the workers, then the metrics service (their last reports reach it).
  std::vector<pid_t> coordinator, workers, others;
  for (const Child& c : children_) {
    (c.name == "coordinator" ? coordinator : absl::StartsWith(c.name, "worker-") ? workers : others).push_back(c.pid);
  }
  StopAll(coordinator, absl::Seconds(30));
  StopAll(workers, absl::Seconds(5));
  StopAll(others, absl::Seconds(5));
  children_.clear();
  // Last: until every child has stopped, `gradsync local up` finds a live supervisor in the file
  // and refuses to start a second cluster here.
  RemoveLocalClusterFile(options_.state_dir);
}

absl::Status LocalCluster::CheckAlive() const {
  for (const Child& c : children_) {
    if (!Alive(c.pid)) {
      return absl::UnavailableError(
          absl::StrCat(c.name, " (pid ", c.pid, ") exited; its log ", c.log, " ends:\n", TailFile(c.log, 15)));
    }
  }
  return absl::OkStatus();
}

std::vector<pid_t> LocalCluster::pids() const {
  std::vector<pid_t> out;
  for (const Child& c : children_) out.push_back(c.pid);
  return out;
}

std::string LocalCluster::RecentLogs(int lines) const {
  std::string out;
  for (const Child& c : children_) {
    absl::StrAppend(&out, "==> ", c.log, " <==\n", TailFile(c.log, lines), "\n");
  }
  return out;
}

}  // namespace gradsync::cluster

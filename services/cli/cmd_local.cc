// gradsync local up|down: a local cluster that runs in the background until stopped.
//
// `up` forks a supervisor that owns the cluster's processes and keeps each job's series in its
// artifacts as the job ends (series_keeper.h), where `report` reads them once the cluster is down.
// The cluster file that records the supervisor (DIR/endpoints.json,
// gradsync/cli/local_cluster_file.h) appears once the cluster is ready; `up` prints it once every
// worker has registered too. `down` signals that supervisor, which stops everything it started.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "connection.h"
#include "series_keeper.h"
#include "gradsync/cluster/current_cluster.h"
#include "gradsync/cluster/local_cluster.h"
#include "gradsync/cluster/local_cluster_file.h"
#include "gradsync/core/args.h"
#include "gradsync/core/child_process.h"
#include "gradsync/core/shutdown.h"
#include "gradsync/device/device_request.h"

namespace gradsync::cli {
namespace {

namespace fs = std::filesystem;

// The supervisor pid recorded in DIR's cluster file, or -1.
// The supervisor the cluster file names, while that very process runs: a pid alone could by now
// be anyone's (pids are reused), so its start time must agree too.
pid_t RecordedPid(const std::string& dir) {
  absl::StatusOr<cluster::LocalClusterFile> file = cluster::ReadLocalClusterFile(dir);
  if (!file.ok() || file->supervisor_pid <= 0 || file->supervisor_start == 0) return -1;
  return ProcessStartTime(file->supervisor_pid) == file->supervisor_start ? file->supervisor_pid : -1;
}

// Runs in the forked supervisor: never returns.
[[noreturn]] void Supervise(cluster::LocalClusterOptions options) {
  ::setsid();
  const std::string log = (fs::path(options.state_dir) / "logs" / "supervisor.log").string();
  std::FILE* f = std::freopen(log.c_str(), "a", stdout);
  if (f != nullptr) ::dup2(::fileno(stdout), STDERR_FILENO);
  InstallShutdownHandlers();
  options.supervisor_pid = ::getpid();
  cluster::LocalCluster cluster(options);
  if (absl::Status s = cluster.Start(); !s.ok()) {
    std::fprintf(stderr, "local cluster failed to start: %s\n", std::string(s.message()).c_str());
    cluster.Stop();
    ::_exit(1);
  }
  std::fprintf(stderr, "local cluster up at %s\n", cluster.coordinator_address().c_str());
  std::fflush(stderr);
  SeriesKeeper series(options.state_dir);
  for (int tick = 1; !WaitForShutdown(absl::Milliseconds(200)); ++tick) {
    if (tick % 10 == 0) series.Keep(/*all=*/false);
    auto restarted = cluster.Supervise();
    if (!restarted.ok()) {
      std::fprintf(stderr, "giving up: %s\n", std::string(restarted.status().message()).c_str());
      break;
    }
    for (const std::string& name : *restarted) std::fprintf(stderr, "%s exited; started it again\n", name.c_str());
    std::fflush(stderr);
  }
  series.Keep(/*all=*/true);
  cluster.Stop();
  std::fprintf(stderr, "local cluster stopped\n");
  std::fflush(stderr);
  ::_exit(0);
}

// Waits until `n` workers are registered with the coordinator of the cluster in `args`'
// --state-dir: a cluster `up` returns is one `gradsync workers` shows whole and a job can be
// placed on at once.
absl::Status AwaitWorkers(const Args& args, int n, absl::Time deadline) {
  absl::StatusOr<std::unique_ptr<JobClient>> client = ConnectJobClient(args);
  if (!client.ok()) return client.status();
  for (int registered = 0;;) {
    absl::StatusOr<v1::ListWorkersResponse> workers = (*client)->ListWorkers();
    if (workers.ok()) {
      registered = static_cast<int>(std::count_if(workers->workers().begin(), workers->workers().end(),
                                                  [](const v1::Worker& w) { return w.state() != v1::WORKER_LOST; }));
      if (registered >= n) return absl::OkStatus();
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(registered, " of ", n, " workers registered",
                       workers.ok() ? "" : absl::StrCat(" (", workers.status().message(), ")")));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

int Up(const Args& args) {
  auto workers = args.GetInt("workers", 1, 1, 1024);
  auto port = args.GetInt("coordinator-port", 0, 0, 65535);
  auto rest_port = args.GetInt("rest-port", 0, 0, 65535);
  auto metrics_port = args.GetInt("metrics-port", 0, 0, 65535);
  auto device = device::ParseDeviceRequest(args.Get("device", "auto"), "--device");
  for (const absl::Status& s :
       {workers.status(), port.status(), rest_port.status(), metrics_port.status(), device.status()}) {
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  const std::string dir = args.Get("state-dir");
  if (dir.empty()) {
    std::fprintf(stderr, "gradsync local up: --state-dir is required\n");
    return 2;
  }
  if (pid_t pid = RecordedPid(dir); pid > 0 && ::kill(pid, 0) == 0) {
    std::fprintf(stderr,
                 "a local cluster already runs from %s (supervisor pid %d); stop it with "
                 "gradsync local down --state-dir %s\n",
                 dir.c_str(), pid, dir.c_str());
    return 1;
  }
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "logs", ec);
  // A stale file would read as ready before the supervisor's cluster removes it.
  cluster::RemoveLocalClusterFile(dir);
  cluster::LocalClusterOptions options;
  options.workers = *workers;
  options.state_dir = fs::absolute(dir).string();
  options.coordinator_port = *port;
  options.rest_port = *rest_port;
  options.metrics_port = *metrics_port;
  options.device = *device;
  options.bind_cpus = !args.Has("no-cpu-binding");
  for (const std::string& root : args.GetAll("data-root")) options.data_roots.push_back(fs::absolute(root).string());

  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("fork");
    return 1;
  }
  if (child == 0) Supervise(options);

  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  absl::StatusOr<cluster::LocalClusterFile> ready;
  while (!(ready = cluster::ReadLocalClusterFile(dir)).ok()) {
    if (!Alive(child) || absl::Now() > deadline) {
      std::fprintf(stderr, "the local cluster did not come up; see %s\n%s\n", (fs::path(dir) / "logs").c_str(),
                   TailFile((fs::path(dir) / "logs" / "supervisor.log").string(), 10).c_str());
      if (Alive(child)) ::kill(child, SIGTERM);
      return 1;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  if (absl::Status s = AwaitWorkers(args, *workers, deadline); !s.ok()) {
    std::fprintf(stderr, "the local cluster's workers did not register: %s; see %s\n",
                 std::string(s.message()).c_str(), (fs::path(dir) / "logs").c_str());
    ::kill(child, SIGTERM);
    return 1;
  }
  std::printf("%s", cluster::LocalClusterFileJson(*ready).c_str());
  if (absl::Status s = cluster::SetCurrentCluster(dir); s.ok()) {
    std::fprintf(stderr, "commands now reach this cluster unless told otherwise (recorded in %s)\n",
                 cluster::CurrentClusterPath().c_str());
  } else {
    std::fprintf(stderr, "the cluster is up, but other commands need --state-dir %s: %s\n", dir.c_str(),
                 std::string(s.message()).c_str());
  }
  return 0;
}

int Down(const Args& args) {
  const std::string dir = args.Get("state-dir", cluster::CurrentCluster());
  if (dir.empty()) {
    std::fprintf(stderr, "gradsync local down: no current cluster; name one with --state-dir\n");
    return 2;
  }
  const pid_t pid = RecordedPid(dir);
  if (pid <= 0 || ::kill(pid, 0) != 0) {
    cluster::ForgetCurrentCluster(dir);
    std::fprintf(stderr, "no local cluster runs from %s\n", dir.c_str());
    return 1;
  }
  ::kill(pid, SIGTERM);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (::kill(pid, 0) == 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(50));
  if (::kill(pid, 0) == 0) {
    // The supervisor hung: its children die with it (they have a parent-death signal).
    ::kill(pid, SIGKILL);
  }
  cluster::ForgetCurrentCluster(dir);
  std::printf("local cluster in %s stopped\n", dir.c_str());
  return 0;
}

// `gradsync NAME`'s arguments parsed with its row's options, then `body`; usage (exit 2) otherwise.
int LocalSubcommand(const char* name, int (*body)(const Args&), const std::vector<std::string>& argv) {
  auto args = ParseCommandArgs(name, argv);
  if (!args.ok() || args->positional.size() != 1) {
    if (!args.ok()) std::fprintf(stderr, "%s\n", std::string(args.status().message()).c_str());
    std::fputs(UsageLine(*FindCommand(name)).c_str(), stderr);
    return 2;
  }
  return body(*args);
}

int LocalUpCommand(const std::vector<std::string>& argv) { return LocalSubcommand("local up", Up, argv); }
int LocalDownCommand(const std::vector<std::string>& argv) { return LocalSubcommand("local down", Down, argv); }

}  // namespace

int LocalCommand(const std::vector<std::string>& argv) { return RunSubcommand("local", argv); }

// Its rows of the command table (command_table.h).
std::vector<Command> LocalRows() {
  std::vector<Command> t;
  t.push_back({.name = "local up",
               .synopsis = "--workers N --state-dir DIR [--coordinator-port P] [--rest-port P] [--metrics-port P]\n"
                           "    [--device D] [--no-cpu-binding] [--data-root DIR ...]",
               .summary = "start a local cluster in the background and make it the current cluster",
               .example = "gradsync local up --workers 2 --state-dir /tmp/gradsync-local",
               .details = absl::StrCat(
                   "Prints the cluster file DIR/endpoints.json once every service is up and every worker has\n"
                   "registered (`gradsync workers` lists them); writes fresh tokens to\n"
                   "DIR/tokens, readable by you alone.\n",
                   kDevicesHelp,
                   "The coordinator reads data inside each --data-root DIR (default: the directory it started\n"
                   "in). Commands given no --address, --state-dir, GRADSYNC_ADDRESS or GRADSYNC_STATE_DIR\n"
                   "reach this cluster until `gradsync local down`; relative data paths of the specs they\n"
                   "submit start in the directory the command runs in.\n"),
               .options = {{"workers", "N"},
                           {"state-dir", "DIR"},
                           {"coordinator-port", "P"},
                           {"rest-port", "P"},
                           {"metrics-port", "P"},
                           {"device", "D"},
                           {"no-cpu-binding", ""},
                           {"data-root", "DIR"}},
               .run = LocalUpCommand});
  t.push_back({.name = "local down",
               .synopsis = "[--state-dir DIR]",
               .summary = "stop a local cluster (default: the current one) and forget it",
               .example = "gradsync local down",
               .options = {{"state-dir", "DIR"}},
               .run = LocalDownCommand});
  const std::vector<OptionDoc> job_options = Plus(ConnectionOptions(), MetricsApiOptions());
  return t;
}

}  // namespace gradsync::cli

// gradsync run FILE: a whole local cluster for one job, from start to summary.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "charts.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "display.h"
#include "gradsync/cluster/local_cluster.h"
#include "gradsync/cluster/local_tokens.h"
#include "gradsync/core/args.h"
#include "gradsync/core/secret_file.h"
#include "gradsync/core/shutdown.h"
#include "gradsync/device/device_request.h"
#include "grpc_job_client.h"
#include "job_watch.h"
#include "metrics_client.h"
#include "output_format.h"
#include "series_files.h"
#include "series_keeper.h"
#include "spec_input.h"

namespace gradsync::cli {
namespace {

std::string MakeRunDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/gradsync-run-XXXXXX");
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  return ::mkdtemp(buf.data()) != nullptr ? std::string(buf.data()) : "";
}

// The cluster's coordinator with its token, and the token of its metrics JSON API.
struct ClusterClient {
  std::unique_ptr<GrpcJobClient> jobs;
  std::string metrics_token;
};

absl::StatusOr<ClusterClient> ConnectTo(const cluster::LocalCluster& cluster) {
  absl::StatusOr<std::string> token =
      ReadTokenFile(cluster.token_files().at(cluster::kAuthToken), "the local cluster's token");
  if (!token.ok()) return token.status();
  absl::StatusOr<std::string> metrics_token =
      ReadTokenFile(cluster.token_files().at(cluster::kMetricsToken), "the local cluster's metrics token");
  if (!metrics_token.ok()) return metrics_token.status();
  rpc::ChannelOptions channel;
  channel.bearer_token = *std::move(token);
  return ClusterClient{std::make_unique<GrpcJobClient>(cluster.coordinator_address(), channel),
                       *std::move(metrics_token)};
}

constexpr char kRunUsage[] =
    "usage: gradsync run FILE [--workers N] [--device D] [--no-cpu-binding] [--set path=value ...] [-o json]\n"
    "       gradsync run [--workers N] [OPTIONS] -- COMMAND [ARGS...]\n";

// What `gradsync run` was asked: the job, its cluster, and how to print.
struct RunRequest {
  v1::JobSpec spec;
  cluster::LocalClusterOptions cluster;
  OutputFormat format = OutputFormat::kTable;
};

// The request, or what is wrong with the command line or the spec (each an exit code 2), its
// message ready to print.
absl::StatusOr<RunRequest> ParseRun(const std::vector<std::string>& argv) {
  auto args = ParseCommandArgs("run", argv);
  if (!args.ok()) return absl::InvalidArgumentError(absl::StrCat(args.status().message(), "\n", kRunUsage));
  RunRequest r;
  absl::StatusOr<OutputFormat> format = OutputFormatOf("run", *args);
  if (!format.ok()) return format.status();
  r.format = *format;
  const std::optional<std::vector<std::string>> command = CommandAfterDashes(argv);
  const size_t files = args->positional.size() - (command.has_value() ? command->size() : 0);
  if (files != (command.has_value() ? 0 : 1)) return absl::InvalidArgumentError(kRunUsage);
  auto workers = args->GetInt("workers", 0, 1, 1024);
  if (!workers.ok()) return workers.status();
  auto device = device::ParseDeviceRequest(args->Get("device", "auto"), "--device");
  if (!device.ok()) return device.status();
  auto spec = command.has_value() ? ScriptSpecFromCommandLine(*command, SpecOverrides(*args), *workers)
                                  : LoadSpecFromCommandLine(args->positional[0], SpecOverrides(*args), *workers);
  if (!spec.ok()) return absl::InvalidArgumentError(absl::StrCat("invalid job spec: ", spec.status().message()));
  r.spec = *std::move(spec);
  r.cluster.workers = *workers > 0 ? *workers : r.spec.training().world_size();
  r.cluster.state_dir = args->Get("state-dir", "");
  r.cluster.device = *device;
  r.cluster.bind_cpus = !args->Has("no-cpu-binding");
  r.cluster.data_roots = RunDataRoots(r.spec);
  return r;
}

// Supervises the cluster while the job runs: a child that dies is started again (a worker rejoins
// as a spare and the job recovers); one that keeps dying ends the run. Sets `*stop` when it ends,
// on a shutdown request or a broken cluster, and ends when `*stop` is set.
class Supervisor {
 public:
  Supervisor(cluster::LocalCluster& cluster, std::atomic<bool>* stop)
      : thread_([this, &cluster, stop] { Run(cluster, stop); }) {}
  ~Supervisor() {
    if (thread_.joinable()) thread_.join();
  }

  // Waits for it; why the cluster broke, if it did.
  absl::Status Join() {
    if (thread_.joinable()) thread_.join();
    return broken_;
  }

 private:
  void Run(cluster::LocalCluster& cluster, std::atomic<bool>* stop) {
    while (!*stop && !ShutdownRequested()) {
      absl::StatusOr<std::vector<std::string>> restarted = cluster.Supervise();
      if (!restarted.ok()) {
        broken_ = restarted.status();
        break;
      }
      for (const std::string& name : *restarted) {
        std::fprintf(stderr, "[supervisor] %s exited; started it again\n", name.c_str());
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
    *stop = true;
  }

  absl::Status broken_;
  std::thread thread_;  // last: starts once the members above exist
};

// The files a finished run leaves beside its logs: the curves and the series.
struct RunFiles {
  std::string report, series;
};

RunFiles KeepFiles(const FollowedJob& followed, const v1::Job& created, const std::string& state_dir) {
  RunFiles files;
  if (!followed.series.ok()) return files;
  files.report = state_dir + "/report.svg";
  std::ofstream(files.report) << SvgReport(*followed.series);
  if (absl::StatusOr<std::string> kept =
          KeepSeries(*followed.series, followed.job.ok() ? *followed.job : created, state_dir);
      kept.ok()) {
    files.series = *kept;
  } else {
    std::fprintf(stderr, "the job's series is not kept: %s\n", std::string(kept.status().message()).c_str());
  }
  return files;
}

// Prints how the job ended (the summary, or why the run failed) and returns the exit code.
int Conclude(const RunRequest& request, const cluster::LocalCluster& cluster, const FollowedJob& followed,
             const absl::Status& cluster_health, const RunFiles& files) {
  if (!cluster_health.ok()) {
    std::fprintf(stderr, "the local cluster failed: %s\n", std::string(cluster_health.message()).c_str());
    return 1;
  }
  if (!followed.job.ok()) {
    std::fprintf(stderr, "watching the job failed: %s\n%s", std::string(followed.job.status().message()).c_str(),
                 cluster.RecentLogs(10).c_str());
    return 1;
  }
  const v1::Job& job = *followed.job;
  if (request.format != OutputFormat::kTable) {
    std::printf("%s", InFormat(SummaryJson(job, cluster.log_dir()), request.format).c_str());
  } else {
    std::printf("%s", SummaryText(job).c_str());
    if (!files.report.empty()) std::printf("  report      %s (loss and throughput curves)\n", files.report.c_str());
    if (!files.series.empty()) {
      std::printf("  series      %s (gradsync report %s -o FILE.svg|.csv|.jsonl --state-dir %s)\n",
                  files.series.c_str(), job.id().c_str(), request.cluster.state_dir.c_str());
    }
  }
  if (job.state() == v1::SUCCEEDED) return 0;
  std::fprintf(stderr, "%s", cluster.RecentLogs(10).c_str());
  return 1;
}

// Ctrl-C: the job is cancelled, and the cluster stays up until the ranks have saved (the
// coordinator bounds the wait).
int Interrupted(JobClient& client, const std::string& name) {
  std::fprintf(stderr, "interrupted: the job stops at the next step boundary and saves its weights\n");
  if (auto cancelled = client.Cancel(name); cancelled.ok() && !IsTerminal(cancelled->state())) {
    (void)client.Watch(
        name, [](const v1::Job&) {}, nullptr);
  }
  std::fprintf(stderr, "stopping the local cluster\n");
  return 130;
}

// Starts the cluster, submits the job, follows it to its end under the supervisor.
int RunJob(const RunRequest& request, cluster::LocalCluster& cluster, FILE* progress) {
  absl::StatusOr<ClusterClient> connected = ConnectTo(cluster);
  if (!connected.ok()) {
    std::fprintf(stderr, "%s\n", std::string(connected.status().message()).c_str());
    return 1;
  }
  GrpcJobClient& client = *connected->jobs;
  auto created = client.Create(request.spec);
  if (!created.ok()) {
    std::fprintf(stderr, "submitting the job failed: %s\n", std::string(created.status().message()).c_str());
    return 1;
  }
  std::fprintf(progress, "job %s submitted to %s\n", created->id().c_str(), client.address().c_str());
  std::atomic<bool> stop{false};
  Supervisor supervisor(cluster, &stop);
  ProgressView view(progress);
  const MetricsApi metrics{cluster.endpoints().at("metricsApi"), connected->metrics_token, true};
  const FollowedJob followed = FollowJob(client, created->name(), view, metrics, &stop);
  const RunFiles files = KeepFiles(followed, *created, request.cluster.state_dir);
  view.Finish();
  const bool interrupted = ShutdownRequested();
  const absl::Status cluster_health = supervisor.Join();
  if (interrupted) return Interrupted(client, created->name());
  return Conclude(request, cluster, followed, cluster_health, files);
}

}  // namespace

int RunCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<RunRequest> request = ParseRun(argv);
  if (!request.ok()) {
    const std::string why(request.status().message());
    std::fprintf(stderr, "%s%s", why.c_str(), absl::EndsWith(why, "\n") ? "" : "\n");
    return 2;
  }
  const bool made_dir = request->cluster.state_dir.empty();
  if (made_dir) request->cluster.state_dir = MakeRunDir();
  if (request->cluster.state_dir.empty()) {
    std::fprintf(stderr, "cannot create a run directory under $TMPDIR\n");
    return 1;
  }
  FILE* progress = request->format == OutputFormat::kTable ? stdout : stderr;
  std::fputs(CheckpointSizeNote(request->spec).c_str(), stderr);
  InstallShutdownHandlers();
  std::fprintf(progress, "starting a local cluster: 1 coordinator, %d workers (logs in %s/logs)\n",
               request->cluster.workers, request->cluster.state_dir.c_str());
  cluster::LocalCluster cluster(request->cluster);
  if (absl::Status s = cluster.Start(); !s.ok()) {
    std::fprintf(stderr, "cannot start the local cluster: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  const int code = RunJob(*request, cluster, progress);
  cluster.Stop();
  if (made_dir) {
    // Nothing asked for this directory: say that it stays, and what it holds.
    std::fprintf(stderr,
                 "the run's files stay in %s (weights, checkpoints and series under artifacts/, logs under logs/); "
                 "remove it when done, or give --state-dir DIR to choose the place\n",
                 request->cluster.state_dir.c_str());
  }
  return code;
}

// Its rows of the command table (command_table.h).
std::vector<Command> RunRows() {
  using F = OutputFormat;
  std::vector<Command> t;
  t.push_back({.name = "run",
               .synopsis = "FILE|-- COMMAND... [--workers N] [--device D] [--no-cpu-binding] [--set path=value ...] "
                           "[--state-dir DIR]",
               .summary = "start a local cluster, run the job to the end, print a summary",
               .example = "gradsync run examples/jobs/mlp.yaml --workers 2 --set training.maxSteps=100",
               .details = absl::StrCat(
                   "FILE is a job spec, YAML or JSON. --workers N workers (default: the spec's\n"
                   "training.worldSize). After \"--\", a command instead: each of the N ranks runs it in the\n"
                   "current directory with torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR, ...), as\n"
                   "torchrun --standalone --nproc-per-node N does (a script job; --set training.maxRestarts=K).\n",
                   kDevicesHelp,
                   "--state-dir DIR keeps the cluster's logs, tokens and artifacts (default: a new directory\n"
                   "under $TMPDIR). Relative data paths start in the current directory. Ctrl-C cancels the\n"
                   "job: its ranks save the weights at the next step boundary, then the cluster stops.\n"),
               .options = {{"workers", "N"},
                           {"set", "path=value"},
                           {"resume-from", "JOB"},
                           Output(),
                           {"state-dir", "DIR"},
                           {"device", "D"},
                           {"no-cpu-binding", ""}},
               .formats = {F::kTable, F::kJson, F::kYaml},
               .operands = Operands::kFiles,
               .run = RunCommand});
  return t;
}

}  // namespace gradsync::cli

// gradsync run FILE: a whole local cluster for one job, from start to summary.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "args.h"
#include "charts.h"
#include "command_table.h"
#include "commands.h"
#include "display.h"
#include "gradsync/core/secret_file.h"
#include "gradsync/core/shutdown.h"
#include "gradsync/device/device_request.h"
#include "grpc_job_client.h"
#include "local_cluster.h"
#include "local_tokens.h"
#include "metrics_client.h"
#include "output_format.h"
#include "series_files.h"
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

absl::StatusOr<ClusterClient> ConnectTo(const LocalCluster& cluster) {
  absl::StatusOr<std::string> token = ReadTokenFile(cluster.token_files().at(kAuthToken), "the local cluster's token");
  if (!token.ok()) return token.status();
  absl::StatusOr<std::string> metrics_token =
      ReadTokenFile(cluster.token_files().at(kMetricsToken), "the local cluster's metrics token");
  if (!metrics_token.ok()) return metrics_token.status();
  rpc::ChannelOptions channel;
  channel.bearer_token = *std::move(token);
  return ClusterClient{std::make_unique<GrpcJobClient>(cluster.coordinator_address(), channel),
                       *std::move(metrics_token)};
}

// The job's series once it holds the job's last step (the workers' last reports may still be on
// their way when the job ends), or as it is after a few seconds.
void AwaitLastStep(const std::string& metrics_api, const std::string& token, const std::string& id, int64_t last) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (absl::Now() < deadline) {
    auto series = FetchSeries(metrics_api, token, id);
    if (series.ok() && series->steps_size() > 0 && series->steps(series->steps_size() - 1).step() >= last) return;
    absl::SleepFor(absl::Milliseconds(100));
  }
}

// Writes the series beside the job's weights (<artifacts>/<job id>/series.jsonl), where
// `gradsync report` reads it once the cluster is gone. Returns the path, or "" after saying why
// not on stderr.
std::string KeepSeries(const v1::JobSeries& series, const v1::Job& job, const std::string& state_dir) {
  const std::string weights = job.result().weights_path();
  const std::filesystem::path dir = !weights.empty() ? std::filesystem::path(weights).parent_path()
                                                     : std::filesystem::path(state_dir) / "artifacts" / job.id();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = (dir / kSeriesFileName).string();
  if (absl::Status s = WriteFileAtomically(path, SeriesJsonl(series)); !s.ok()) {
    std::fprintf(stderr, "the job's series is not kept: %s\n", std::string(s.message()).c_str());
    return "";
  }
  return path;
}

}  // namespace

int RunCommand(const std::vector<std::string>& argv) {
  auto args = ParseCommandArgs("run", argv);
  if (!args.ok()) {
    std::fprintf(
        stderr,
        "%s\nusage: gradsync run FILE [--workers N] [--device D] [--no-cpu-binding] [--set path=value ...] [-o json]\n",
        std::string(args.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<OutputFormat> format = OutputFormatOf("run", *args);
  if (!format.ok()) {
    std::fprintf(stderr, "%s\n", std::string(format.status().message()).c_str());
    return 2;
  }
  if (args->positional.size() != 1) {
    std::fprintf(
        stderr,
        "usage: gradsync run FILE [--workers N] [--device D] [--no-cpu-binding] [--set path=value ...] [-o json]\n");
    return 2;
  }
  auto workers = args->GetInt("workers", 0, 1, 1024);
  auto device = device::ParseDeviceRequest(args->Get("device", "auto"), "--device");
  for (const absl::Status& s : {workers.status(), device.status()}) {
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  auto spec = LoadSpecFromCommandLine(args->positional[0], args->GetAll("set"), *workers);
  if (!spec.ok()) {
    std::fprintf(stderr, "invalid job spec: %s\n", std::string(spec.status().message()).c_str());
    return 2;
  }
  const bool json = *format != OutputFormat::kTable;
  FILE* progress = json ? stderr : stdout;

  LocalClusterOptions options;
  options.workers = *workers > 0 ? *workers : spec->training().world_size();
  options.state_dir = args->Get("state-dir", "");
  if (options.state_dir.empty()) options.state_dir = MakeRunDir();
  options.device = *device;
  options.bind_cpus = !args->Has("no-cpu-binding");
  options.data_roots = RunDataRoots(*spec);
  if (options.state_dir.empty()) {
    std::fprintf(stderr, "cannot create a run directory under $TMPDIR\n");
    return 1;
  }
  InstallShutdownHandlers();
  std::fprintf(progress, "starting a local cluster: 1 coordinator, %d workers (logs in %s/logs)\n", options.workers,
               options.state_dir.c_str());
  LocalCluster cluster(options);
  if (absl::Status s = cluster.Start(); !s.ok()) {
    std::fprintf(stderr, "cannot start the local cluster: %s\n", std::string(s.message()).c_str());
    return 1;
  }

  absl::StatusOr<ClusterClient> connected = ConnectTo(cluster);
  if (!connected.ok()) {
    std::fprintf(stderr, "%s\n", std::string(connected.status().message()).c_str());
    return 1;
  }
  GrpcJobClient& client = *connected->jobs;
  auto created = client.Create(*spec);
  if (!created.ok()) {
    std::fprintf(stderr, "submitting the job failed: %s\n", std::string(created.status().message()).c_str());
    return 1;
  }
  std::fprintf(progress, "job %s submitted to %s\n", created->id().c_str(), client.address().c_str());

  // Supervises the cluster while the job runs: a child that dies is started again (a worker
  // rejoins as a spare and the job recovers); one that keeps dying ends the run.
  std::atomic<bool> stop{false};
  std::atomic<bool> cluster_broken{false};
  absl::Status broken_reason;
  std::thread guard([&] {
    while (!stop) {
      if (ShutdownRequested()) break;
      auto restarted = cluster.Supervise();
      if (!restarted.ok()) {
        broken_reason = restarted.status();
        cluster_broken = true;
        break;
      }
      for (const std::string& name : *restarted)
        std::fprintf(stderr, "[supervisor] %s exited; started it again\n", name.c_str());
      absl::SleepFor(absl::Milliseconds(200));
    }
    stop = true;
  });
  ProgressView view(progress);
  auto final_job = client.Watch(
      created->name(), [&](const v1::Job& j) { view.Update(j); }, &stop);
  std::string report_path, series_path;
  if (final_job.ok()) {
    AwaitLastStep(cluster.endpoints().at("metricsApi"), connected->metrics_token, created->id(),
                  final_job->result().global_step());
  }
  auto series = view.UseSeriesFrom(cluster.endpoints().at("metricsApi"), connected->metrics_token, created->id());
  if (series.ok()) {
    report_path = options.state_dir + "/report.svg";
    std::ofstream(report_path) << SvgReport(*series);
    series_path = KeepSeries(*series, final_job.ok() ? *final_job : *created, options.state_dir);
  }
  view.Finish();
  const bool interrupted = ShutdownRequested();
  stop = true;
  guard.join();
  const bool broken = cluster_broken.load();
  const absl::Status alive = broken_reason;

  int code = 0;
  if (interrupted) {
    std::fprintf(stderr, "interrupted: the job stops at the next step boundary and saves its weights\n");
    // The cluster stays up until the ranks have saved (the coordinator bounds the wait).
    if (auto cancelled = client.Cancel(created->name()); cancelled.ok() && !IsTerminal(cancelled->state())) {
      (void)client.Watch(
          created->name(), [](const v1::Job&) {}, nullptr);
    }
    std::fprintf(stderr, "stopping the local cluster\n");
    code = 130;
  } else if (broken) {
    std::fprintf(stderr, "the local cluster failed: %s\n", std::string(alive.message()).c_str());
    code = 1;
  } else if (!final_job.ok()) {
    std::fprintf(stderr, "watching the job failed: %s\n%s", std::string(final_job.status().message()).c_str(),
                 cluster.RecentLogs(10).c_str());
    code = 1;
  } else {
    if (json) {
      std::printf("%s", InFormat(SummaryJson(*final_job, cluster.log_dir()), *format).c_str());
    } else {
      std::printf("%s", SummaryText(*final_job).c_str());
    }
    if (!report_path.empty() && !json)
      std::printf("  report      %s (loss and throughput curves)\n", report_path.c_str());
    if (!series_path.empty() && !json)
      std::printf("  series      %s (gradsync report %s -o FILE.svg|.csv|.jsonl --state-dir %s)\n", series_path.c_str(),
                  created->id().c_str(), options.state_dir.c_str());
    code = final_job->state() == v1::SUCCEEDED ? 0 : 1;
    if (code != 0) std::fprintf(stderr, "%s", cluster.RecentLogs(10).c_str());
  }
  cluster.Stop();
  return code;
}

}  // namespace gradsync::cli

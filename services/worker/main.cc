// gradsync-worker: joins a coordinator's pool and trains the generations it is assigned.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent.h"
#include "gpu_metrics.h"
#include "gradsync/core/cpu_set.h"
#include "gradsync/core/daemon_flags.h"
#include "gradsync/core/endpoints_file.h"
#include "gradsync/core/env.h"
#include "gradsync/core/listen_guard.h"
#include "gradsync/core/log.h"
#include "gradsync/core/shutdown.h"
#include "gradsync/core/token_auth.h"
#include "gradsync/device/device.h"
#include "gradsync/http/metrics.h"
#include "gradsync/http/process_metrics.h"
#include "gradsync/kernels/cpu/blas_threads.h"
#include "node_agent.h"
#include "worker_metrics.h"

ABSL_FLAG(std::string, coordinator, gradsync::EnvOr("GRADSYNC_COORDINATOR", "localhost:7070"),
          "coordinator gRPC address host:port (env GRADSYNC_COORDINATOR)");
ABSL_FLAG(std::string, comm_host, gradsync::EnvOr("GRADSYNC_COMM_HOST", gradsync::HostName()),
          "address other ranks reach this worker's collectives on (env GRADSYNC_COMM_HOST)");
ABSL_FLAG(std::string, name, gradsync::EnvOr("GRADSYNC_WORKER_NAME", "worker"),
          "prefix of this worker's id (env GRADSYNC_WORKER_NAME)");
ABSL_FLAG(int, blas_threads, 1,
          "threads per CPU matmul; 1 keeps results bitwise reproducible and ranks off each other's cores");
ABSL_FLAG(std::string, metrics, gradsync::EnvOr("GRADSYNC_METRICS", ""),
          "gradsync-metrics gRPC address for step reports; empty: none (env GRADSYNC_METRICS)");
ABSL_FLAG(std::string, metrics_listen, gradsync::EnvOr("GRADSYNC_WORKER_METRICS_LISTEN", "0.0.0.0:9467"),
          "this worker's Prometheus /metrics address; port 0 picks a free one; empty disables "
          "(env GRADSYNC_WORKER_METRICS_LISTEN)");
ABSL_FLAG(std::string, metrics_token_file, gradsync::EnvOr("GRADSYNC_METRICS_TOKEN_FILE", ""),
          "file holding the bearer token scrapes of this worker's /metrics must present; required when "
          "--metrics_listen is beyond loopback (env GRADSYNC_METRICS_TOKEN_FILE)");
ABSL_FLAG(bool, insecure, false,
          "serve /metrics beyond loopback without --metrics_token_file (a warning is logged on every start)");
ABSL_FLAG(std::string, endpoints_file, "",
          "if set, write {\"metrics\": ..., \"health\": ...} (127.0.0.1:PORT each) here once serving");
ABSL_FLAG(std::string, cluster_token_file, gradsync::EnvOr("GRADSYNC_CLUSTER_TOKEN_FILE", ""),
          "file holding the cluster token the coordinator asks workers for, and the metrics service their step "
          "reports (env GRADSYNC_CLUSTER_TOKEN_FILE)");
ABSL_FLAG(std::string, tls_ca_file, gradsync::EnvOr("GRADSYNC_TLS_CA_FILE", ""),
          "PEM CA certificate: talk TLS to the coordinator, verifying it with this (env GRADSYNC_TLS_CA_FILE)");
ABSL_FLAG(std::string, tls_server_name, gradsync::EnvOr("GRADSYNC_TLS_SERVER_NAME", ""),
          "the name the coordinator's certificate must carry when --coordinator dials another (an IP address, a "
          "tunnel); needs --tls_ca_file (env GRADSYNC_TLS_SERVER_NAME)");
ABSL_FLAG(std::string, health_listen, gradsync::EnvOr("GRADSYNC_WORKER_HEALTH_LISTEN", "0.0.0.0:7072"),
          "gRPC health (grpc.health.v1) address for probes; port 0 picks a free one; empty disables "
          "(env GRADSYNC_WORKER_HEALTH_LISTEN)");
ABSL_FLAG(std::string, inject_stall, gradsync::EnvOr("GRADSYNC_INJECT_STALL", ""),
          "fault drill: \"rank=R,step=S,seconds=T\" stalls rank R at the start of step S for T seconds while "
          "heartbeats go on, to exercise hang diagnosis (env GRADSYNC_INJECT_STALL)");
ABSL_FLAG(int64_t, abort_grace_ms, 30000,
          "how long a generation the coordinator aborted may take to stop (at least 3 of its slowest steps) "
          "before the worker logs where it is stuck and exits with status 70 for its supervisor to restart "
          "it; 0 never exits");
ABSL_FLAG(int64_t, stop_checkpoint_timeout_ms, 15000,
          "on SIGTERM or SIGINT during a generation (scancel, a pod's deletion, a node drain): how long the ranks may "
          "take to reach their next step boundary and commit a checkpoint there before the worker stops, so that "
          "the run resumes from where it was stopped; 0 stops at once, from the last periodic checkpoint. Keep it "
          "below the grace the supervisor gives (Slurm's KillWait, terminationGracePeriodSeconds; both 30 s)");
ABSL_FLAG(std::string, sample_log_dir, gradsync::EnvOr("GRADSYNC_SAMPLE_LOG_DIR", ""),
          "if set, append every step's sample indices here, a file per job generation and rank, for "
          "auditing data coverage (env GRADSYNC_SAMPLE_LOG_DIR)");
ABSL_FLAG(std::string, job_log_dir, gradsync::EnvOr("GRADSYNC_JOB_LOG_DIR", ""),
          "If set, each job's own log lines are also appended to DIR/<job id>/rank-<rank>.log (what gradsync "
          "logs reads for a local cluster); they go to the coordinator either way");
ABSL_FLAG(std::string, python_dir, gradsync::EnvOr("GRADSYNC_PYTHON_DIR", ""),
          "the directory holding the gradsync Python package, put first on a script job's PYTHONPATH (env "
          "GRADSYNC_PYTHON_DIR; default: python/ beside the binaries' directory, or lib/gradsync/python)");
ABSL_FLAG(std::string, device, gradsync::EnvOr("GRADSYNC_DEVICE", "auto"),
          "auto, cpu, cuda or cuda:N (env GRADSYNC_DEVICE)");
ABSL_FLAG(std::string, nvml_library, gradsync::EnvOr("GRADSYNC_NVML_LIBRARY", "libnvidia-ml.so.1"),
          "the NVIDIA driver's NVML library, read for the GPU health series of /metrics (env "
          "GRADSYNC_NVML_LIBRARY)");
ABSL_FLAG(std::string, cpus, gradsync::EnvOr("GRADSYNC_WORKER_CPUS", ""),
          "CPUs to run on, a list like 0-3,6 (as taskset -c); empty: wherever the scheduler puts it. A local "
          "cluster gives each worker its share, and so does the node agent (--gpus, --workers) of its list (env "
          "GRADSYNC_WORKER_CPUS)");
ABSL_FLAG(std::string, gpus, "",
          "node agent: instead of training itself, run and supervise one worker process per GPU of this node: all, "
          "N (the first N) or a list of ordinals such as 0,2,5. Worker K gets --device=cuda:K with every GPU still "
          "visible (NCCL's NVLink and peer-to-peer transports need that), --name=<name>-gpuK, --metrics_listen and "
          "--health_listen at their ports plus K, its share of --cpus, and every other flag given here; one that "
          "exits is started again after a backoff. No environment fallback, so that the workers it starts never "
          "inherit it");
ABSL_FLAG(int, workers, 0,
          "node agent for CPU workers: instead of training itself, run and supervise N worker processes, worker K "
          "with --device=cpu, --name=<name>-cpuK and ports plus K as with --gpus; 0: be one worker");

namespace {

// The token scrapes of /metrics present. /metrics beyond loopback needs one, unless --insecure.
absl::StatusOr<gradsync::TokenAuth> MetricsTokenFromFlags() {
  const std::string path = absl::GetFlag(FLAGS_metrics_token_file);
  absl::Status guarded = gradsync::CheckListenersGuarded(
      {{"--metrics_listen", absl::GetFlag(FLAGS_metrics_listen), {{"--metrics_token_file", !path.empty()}}}},
      absl::GetFlag(FLAGS_insecure));
  if (!guarded.ok()) return guarded;
  return gradsync::TokenAuth::FromOptionalFile(path, "the metrics token");
}

// The coordinator's channel: TLS roots, the name to verify and the cluster token. A server name
// without a CA is refused, not ignored: the channel would be plaintext while the operator expects a
// verified coordinator, and the cluster token would go in the clear.
absl::StatusOr<gradsync::rpc::ChannelOptions> CoordinatorChannelFromFlags() {
  const std::string name = absl::GetFlag(FLAGS_tls_server_name);
  if (absl::Status s = gradsync::rpc::CheckTlsServerName(name); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--tls_server_name: ", s.message()));
  }
  if (!name.empty() && absl::GetFlag(FLAGS_tls_ca_file).empty()) {
    return absl::InvalidArgumentError("--tls_server_name is for a TLS coordinator: give --tls_ca_file too");
  }
  auto channel = gradsync::rpc::ChannelOptions::FromFiles(absl::GetFlag(FLAGS_tls_ca_file),
                                                          absl::GetFlag(FLAGS_cluster_token_file));
  if (channel.ok()) channel->tls_server_name = name;
  return channel;
}

// The flags the node agent passes on to its workers unchanged: every flag of this file set to
// other than its default, except those it sets per worker or that make it an agent.
std::vector<std::string> ForwardedFlags() {
  static const std::set<std::string> kPerWorker = {"gpus",           "workers",       "device", "name",
                                                   "metrics_listen", "health_listen", "cpus",   "endpoints_file"};
  std::vector<std::string> out;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!absl::StrContains(flag->Filename(), "services/worker/") || kPerWorker.count(std::string(name)) > 0) continue;
    if (flag->CurrentValue() != flag->DefaultValue())
      out.push_back(absl::StrCat("--", name, "=", flag->CurrentValue()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The node agent's workers from --gpus or --workers and the flags they share.
absl::StatusOr<std::vector<gradsync::worker::NodeWorker>> NodeWorkersFromFlags() {
  const std::string gpus = absl::GetFlag(FLAGS_gpus);
  const int count = absl::GetFlag(FLAGS_workers);
  auto device = gradsync::device::ParseDeviceRequest(absl::GetFlag(FLAGS_device), "--device");
  if (!device.ok()) return device.status();
  if (!gpus.empty() && count != 0) {
    return absl::InvalidArgumentError(
        "--gpus and --workers: give one, --gpus for GPU workers or --workers N for CPU ones");
  }
  if (count < 0) return absl::InvalidArgumentError(absl::StrCat("--workers: expected 1 or more, not ", count));
  const auto fitting = gpus.empty() ? gradsync::device::DeviceRequest::Cpu() : gradsync::device::DeviceRequest::Gpu(-1);
  if (device->kind != gradsync::device::DeviceRequest::Kind::kAuto && *device != fitting) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device ", device->ToString(), ": the node agent gives each worker its device (",
                     gpus.empty() ? "cpu with --workers" : "cuda:K with --gpus", "); leave --device out"));
  }
  gradsync::worker::NodeLayout layout;
  if (!gpus.empty()) {
    auto selected = gradsync::worker::SelectGpus(gpus, static_cast<int>(gradsync::device::ListGpus().size()),
                                                 gradsync::device::BuiltWithCuda());
    if (!selected.ok()) return selected.status();
    layout.gpus = *std::move(selected);
  }
  layout.cpu_workers = count;
  std::error_code ec;
  layout.binary = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return absl::InternalError(absl::StrCat("cannot find this executable (/proc/self/exe): ", ec.message()));
  layout.name = absl::GetFlag(FLAGS_name);
  layout.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  layout.health_listen = absl::GetFlag(FLAGS_health_listen);
  layout.endpoints_file = absl::GetFlag(FLAGS_endpoints_file);
  if (const std::string list = absl::GetFlag(FLAGS_cpus); !list.empty()) {
    auto cpus = gradsync::ParseCpuList(list);
    if (!cpus.ok()) return absl::InvalidArgumentError(absl::StrCat("--cpus: ", cpus.status().message()));
    layout.cpus = *std::move(cpus);
    const size_t n = layout.gpus.empty() ? static_cast<size_t>(count) : layout.gpus.size();
    if (layout.cpus.size() < n) {
      GS_LOG(WARNING) << "--cpus " << list << ": fewer CPUs than workers (" << n << "); the workers run unbound";
    }
  }
  layout.forwarded = ForwardedFlags();
  return gradsync::worker::PlanNodeWorkers(layout);
}

int RunNodeAgent() {
  gradsync::SetLogComponent("node agent");
  auto workers = NodeWorkersFromFlags();
  if (!workers.ok()) {
    GS_LOG(ERROR) << workers.status();
    return 2;
  }
  gradsync::InstallShutdownHandlers();
  gradsync::worker::NodeAgent agent({.workers = *std::move(workers)});
  return agent.Run();
}

// The process's CPUs (--cpus) and BLAS threads, before any thread starts (though
// BindProcessToCpus binds those already running too). False after logging a bad --cpus.
// A dataset's shards stay open while it trains, a descriptor each (libs/data streams them): the
// soft open-file limit goes up to the hard one, as databases do, so that thousands of shards fit.
void RaiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    GS_LOG(WARNING) << "cannot raise the open-file limit";
  }
}

bool PrepareProcess() {
  RaiseOpenFileLimit();
  if (const std::string list = absl::GetFlag(FLAGS_cpus); !list.empty()) {
    const auto cpus = gradsync::BindProcessToCpuList(list);
    if (!cpus.ok()) {
      GS_LOG(ERROR) << "--cpus: " << cpus.status().message();
      return false;
    }
    GS_LOG(INFO) << "bound to CPUs " << gradsync::FormatCpuList(*cpus);
  }
  if (!gradsync::kernels::cpu::SetBlasThreads(absl::GetFlag(FLAGS_blas_threads))) {
    GS_LOG(WARNING) << "the BLAS in use has no thread control; --blas_threads ignored";
  }
  return true;
}

// The device --device names, resolved on this machine.
absl::StatusOr<gradsync::v1::Device> DeviceFromFlags() {
  auto request = gradsync::device::ParseDeviceRequest(absl::GetFlag(FLAGS_device), "--device");
  if (!request.ok()) return request.status();
  return gradsync::device::ResolveDevice(*request);
}

// The agent's options from the flags; INVALID_ARGUMENT naming a bad one.
absl::StatusOr<gradsync::worker::AgentOptions> AgentOptionsFromFlags(const gradsync::v1::Device& device) {
  gradsync::worker::AgentOptions options;
  options.coordinator = absl::GetFlag(FLAGS_coordinator);
  auto channel = CoordinatorChannelFromFlags();
  if (!channel.ok()) return channel.status();
  options.coordinator_channel = *std::move(channel);
  options.comm_host = absl::GetFlag(FLAGS_comm_host);
  options.name = absl::GetFlag(FLAGS_name);
  options.device = device;
  options.metrics = absl::GetFlag(FLAGS_metrics);
  options.sample_log_dir = absl::GetFlag(FLAGS_sample_log_dir);
  options.job_log_dir = absl::GetFlag(FLAGS_job_log_dir);
  options.python_dir = absl::GetFlag(FLAGS_python_dir);
  auto stall = gradsync::worker::ParseStallFault(absl::GetFlag(FLAGS_inject_stall));
  if (!stall.ok()) return stall.status();
  options.stall = *stall;
  if (absl::GetFlag(FLAGS_abort_grace_ms) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--abort_grace_ms must be 0 or more, not ", absl::GetFlag(FLAGS_abort_grace_ms)));
  }
  options.abort_grace = absl::Milliseconds(absl::GetFlag(FLAGS_abort_grace_ms));
  if (absl::GetFlag(FLAGS_stop_checkpoint_timeout_ms) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--stop_checkpoint_timeout_ms must be 0 or more, not ",
                                                   absl::GetFlag(FLAGS_stop_checkpoint_timeout_ms)));
  }
  options.stop_checkpoint_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_stop_checkpoint_timeout_ms));
  return options;
}

// The worker's own servers: /metrics (--metrics_listen) and grpc.health.v1 (--health_listen),
// SERVING while the worker runs; their addresses go to --endpoints_file.
struct Servers {
  std::unique_ptr<gradsync::http::Server> metrics;
  std::unique_ptr<gradsync::rpc::RunningServer> health;
};

absl::StatusOr<Servers> StartServers(const gradsync::worker::WorkerMetrics& own_metrics,
                                     const std::shared_ptr<prometheus::Collectable>& gpu_metrics) {
  Servers servers;
  std::map<std::string, std::string> endpoints;
  if (const std::string listen = absl::GetFlag(FLAGS_metrics_listen); !listen.empty()) {
    auto scrape = MetricsTokenFromFlags();
    if (!scrape.ok()) return scrape.status();
    std::vector<std::weak_ptr<prometheus::Collectable>> collectables = {own_metrics.registry(),
                                                                        gradsync::http::ProcessMetrics()};
    if (gpu_metrics != nullptr) collectables.push_back(gpu_metrics);
    auto server = gradsync::http::StartMetricsServer(listen, std::move(collectables), *std::move(scrape));
    if (!server.ok())
      return absl::Status(server.status().code(), absl::StrCat("cannot serve /metrics: ", server.status().message()));
    servers.metrics = *std::move(server);
    GS_LOG(INFO) << "serving /metrics on port " << servers.metrics->port();
    endpoints["metrics"] = gradsync::LoopbackAddress(servers.metrics->port());
  }
  if (const std::string listen = absl::GetFlag(FLAGS_health_listen); !listen.empty()) {
    auto server = gradsync::rpc::StartServer(listen, {});
    if (!server.ok())
      return absl::Status(server.status().code(),
                          absl::StrCat("cannot serve health checks: ", server.status().message()));
    servers.health = *std::move(server);
    endpoints["health"] = gradsync::LoopbackAddress(servers.health->port());
  }
  if (const std::string path = absl::GetFlag(FLAGS_endpoints_file); !path.empty()) {
    if (absl::Status s = gradsync::WriteEndpointsFile(path, endpoints); !s.ok()) return s;
  }
  return servers;
}

}  // namespace

int main(int argc, char** argv) {
  gradsync::ParseDaemonFlags(argc, argv,
                             {"gradsync-worker",
                              "joins a coordinator's pool and trains the generations it is assigned\n\n"
                              "  gradsync-worker --coordinator host:port [flags]\n"
                              "  gradsync-worker --gpus all --coordinator host:port [flags]   (one worker per GPU)\n"
                              "  gradsync-worker --workers N --coordinator host:port [flags]  (N CPU workers)",
                              "services/worker/"});
  if (!absl::GetFlag(FLAGS_gpus).empty() || absl::GetFlag(FLAGS_workers) != 0) return RunNodeAgent();
  gradsync::SetLogComponent("worker");
  if (!PrepareProcess()) return 2;
  gradsync::InstallShutdownHandlers();
  absl::StatusOr<gradsync::v1::Device> device = DeviceFromFlags();
  absl::StatusOr<gradsync::worker::AgentOptions> options =
      device.ok() ? AgentOptionsFromFlags(*device) : device.status();
  if (!options.ok()) {
    GS_LOG(ERROR) << options.status();
    return 2;
  }
  gradsync::worker::WorkerMetrics own_metrics;
  // The GPU's health (NVML), when the worker trains on one; outlives the servers that read it.
  std::shared_ptr<prometheus::Collectable> gpu_metrics =
      gradsync::worker::GpuMetricsFor(*device, absl::GetFlag(FLAGS_nvml_library));
  absl::StatusOr<Servers> servers = StartServers(own_metrics, gpu_metrics);
  if (!servers.ok()) {
    GS_LOG(ERROR) << servers.status();
    return servers.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;  // a bad flag, or no server
  }
  options->own_metrics = &own_metrics;
  gradsync::worker::Agent agent(*options);
  const int code = agent.Run();
  if (servers->health) servers->health->Shutdown(absl::Seconds(1));
  return code;
}

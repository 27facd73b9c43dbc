// gradsync-coordinator: job registry, gang scheduler, rendezvous store and worker leases.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "coordinator.h"
#include "coordinator_metrics.h"
#include "gradsync/core/endpoints_file.h"
#include "gradsync/core/env.h"
#include "gradsync/core/log.h"
#include "gradsync/core/shutdown.h"
#include "gradsync/http/metrics.h"
#include "gradsync/rpc/server.h"
#include "grpc_services.h"
#include "rest_gateway.h"
#include "sqlite_job_store.h"

ABSL_FLAG(std::string, listen, gradsync::EnvOr("GRADSYNC_COORDINATOR_LISTEN", "0.0.0.0:7070"),
          "gRPC listen address host:port; port 0 picks a free port (env GRADSYNC_COORDINATOR_LISTEN)");
ABSL_FLAG(std::string, artifact_dir, gradsync::EnvOr("GRADSYNC_ARTIFACT_DIR", "/tmp/gradsync/artifacts"),
          "where final weights are written unless a job names its own directory (env GRADSYNC_ARTIFACT_DIR)");
ABSL_FLAG(std::string, state_dir, gradsync::EnvOr("GRADSYNC_STATE_DIR", ""),
          "directory of the coordinator's database (jobs survive restarts); empty keeps jobs in memory "
          "only (env GRADSYNC_STATE_DIR)");
ABSL_FLAG(std::string, metrics_listen, gradsync::EnvOr("GRADSYNC_COORDINATOR_METRICS_LISTEN", "0.0.0.0:9465"),
          "Prometheus /metrics address host:port; port 0 picks a free port; empty disables "
          "(env GRADSYNC_COORDINATOR_METRICS_LISTEN)");
ABSL_FLAG(std::string, rest_listen, gradsync::EnvOr("GRADSYNC_REST_LISTEN", "0.0.0.0:8080"),
          "REST API address host:port; port 0 picks a free port; empty disables (env GRADSYNC_REST_LISTEN)");
ABSL_FLAG(std::string, auth_token_file, gradsync::EnvOr("GRADSYNC_AUTH_TOKEN_FILE", ""),
          "file holding the bearer token the job APIs (REST and gRPC) require; empty: no token "
          "(env GRADSYNC_AUTH_TOKEN_FILE)");
ABSL_FLAG(std::string, cluster_token_file, gradsync::EnvOr("GRADSYNC_CLUSTER_TOKEN_FILE", ""),
          "file holding the token workers must present to join (CoordinatorService); empty: none "
          "(env GRADSYNC_CLUSTER_TOKEN_FILE)");
ABSL_FLAG(std::string, tls_cert_file, gradsync::EnvOr("GRADSYNC_TLS_CERT_FILE", ""),
          "PEM certificate chain: gRPC and REST serve TLS with it and --tls_key_file (env GRADSYNC_TLS_CERT_FILE)");
ABSL_FLAG(std::string, tls_key_file, gradsync::EnvOr("GRADSYNC_TLS_KEY_FILE", ""),
          "PEM private key of --tls_cert_file (env GRADSYNC_TLS_KEY_FILE)");
ABSL_FLAG(int64_t, max_body_bytes, 1 << 20, "largest REST request body accepted (413 above)");
ABSL_FLAG(int64_t, preempt_checkpoint_timeout_s, 20,
          "on SIGTERM, how long to wait for running jobs to checkpoint before stopping");
ABSL_FLAG(int64_t, heartbeat_interval_ms, 1000, "how often workers heartbeat");
ABSL_FLAG(int64_t, lease_timeout_ms, 6000, "a worker silent for this long is declared lost");
ABSL_FLAG(int64_t, stall_timeout_ms, 5000,
          "a generation with no finished collective or step for this long (or three step times) gets a "
          "Stalled event naming the rank behind");
ABSL_FLAG(int64_t, rendezvous_last_call_ms, 2000,
          "elastic jobs: once minWorkers are idle, how long to wait for more before starting with fewer");
ABSL_FLAG(int64_t, scale_up_delay_s, 30,
          "elastic jobs: a generation below maxWorkers grows into idle workers after running this long");
ABSL_FLAG(std::string, endpoints_file, "",
          "if set, write {\"grpc\": \"host:port\"} here once serving (for callers that asked for port 0)");

namespace {}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("gradsync coordinator: gradsync-coordinator [--listen host:port]");
  absl::ParseCommandLine(argc, argv);
  gradsync::SetLogComponent("coordinator");
  gradsync::InstallShutdownHandlers();

  gradsync::coordinator::CoordinatorOptions options;
  options.artifact_dir = absl::GetFlag(FLAGS_artifact_dir);
  options.heartbeat_interval = absl::Milliseconds(absl::GetFlag(FLAGS_heartbeat_interval_ms));
  options.lease_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_lease_timeout_ms));
  options.rendezvous_last_call = absl::Milliseconds(absl::GetFlag(FLAGS_rendezvous_last_call_ms));
  options.scale_up_delay = absl::Seconds(absl::GetFlag(FLAGS_scale_up_delay_s));
  options.stall_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_stall_timeout_ms));
  std::unique_ptr<gradsync::coordinator::JobStore> store;
  const std::string state_dir = absl::GetFlag(FLAGS_state_dir);
  if (state_dir.empty()) {
    GS_LOG(WARNING) << "no --state_dir: jobs are kept in memory and lost when the coordinator stops";
    store = std::make_unique<gradsync::coordinator::InMemoryJobStore>();
  } else {
    std::error_code ec;
    std::filesystem::create_directories(state_dir, ec);
    auto sqlite = gradsync::coordinator::SqliteJobStore::Open(state_dir + "/coordinator.db");
    if (!sqlite.ok()) {
      GS_LOG(ERROR) << sqlite.status();
      return 1;
    }
    GS_LOG(INFO) << "jobs are kept in " << state_dir << "/coordinator.db";
    store = *std::move(sqlite);
  }
  gradsync::coordinator::Coordinator coordinator(options, std::move(store));
  gradsync::coordinator::TokenAuth auth;
  if (const std::string path = absl::GetFlag(FLAGS_auth_token_file); !path.empty()) {
    auto loaded = gradsync::coordinator::TokenAuth::FromFile(path);
    if (!loaded.ok()) {
      GS_LOG(ERROR) << loaded.status();
      return 1;
    }
    auth = *std::move(loaded);
    GS_LOG(INFO) << "job APIs require a bearer token (from " << path << ")";
  }
  gradsync::coordinator::TokenAuth cluster_auth;
  if (const std::string path = absl::GetFlag(FLAGS_cluster_token_file); !path.empty()) {
    auto loaded = gradsync::coordinator::TokenAuth::FromFile(path, "the cluster token");
    if (!loaded.ok()) {
      GS_LOG(ERROR) << loaded.status();
      return 1;
    }
    cluster_auth = *std::move(loaded);
    GS_LOG(INFO) << "workers must present the cluster token (from " << path << ")";
  }
  const std::string tls_cert = absl::GetFlag(FLAGS_tls_cert_file), tls_key = absl::GetFlag(FLAGS_tls_key_file);
  auto tls = gradsync::rpc::ServerTls::FromFiles(tls_cert, tls_key);
  if (!tls.ok()) {
    GS_LOG(ERROR) << tls.status();
    return 1;
  }
  gradsync::coordinator::JobServiceImpl jobs(&coordinator, auth);
  gradsync::coordinator::CoordinatorServiceImpl workers(&coordinator, cluster_auth);

  auto server = gradsync::rpc::StartServer(absl::GetFlag(FLAGS_listen), {&jobs, &workers}, *tls);
  if (!server.ok()) {
    GS_LOG(ERROR) << server.status();
    return 1;
  }
  coordinator.Start();
  // The server holds the collectable weakly: this owns it for the process's life.
  auto coordinator_metrics = std::make_shared<gradsync::coordinator::CoordinatorMetrics>(&coordinator);
  std::unique_ptr<gradsync::http::Server> metrics;
  if (const std::string listen = absl::GetFlag(FLAGS_metrics_listen); !listen.empty()) {
    auto started = gradsync::http::StartMetricsServer(listen, {coordinator_metrics});
    if (!started.ok()) {
      GS_LOG(ERROR) << started.status();
      return 1;
    }
    metrics = *std::move(started);
    GS_LOG(INFO) << "serving /metrics on port " << metrics->port();
  }
  GS_LOG(INFO) << "serving gRPC" << (tls->enabled() ? " over TLS" : "") << " on port " << (*server)->port()
               << " (JobService, CoordinatorService, health, reflection)";
  std::unique_ptr<gradsync::coordinator::RestGateway> rest;
  if (const std::string listen = absl::GetFlag(FLAGS_rest_listen); !listen.empty()) {
    gradsync::coordinator::RestOptions rest_options;
    rest_options.listen = listen;
    rest_options.max_body_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_max_body_bytes));
    rest_options.auth = auth;
    rest_options.tls_cert_file = tls_cert;
    rest_options.tls_key_file = tls_key;
    auto gateway = gradsync::coordinator::RestGateway::Start(&coordinator, rest_options);
    if (!gateway.ok()) {
      GS_LOG(ERROR) << gateway.status();
      return 1;
    }
    rest = *std::move(gateway);
    GS_LOG(INFO) << "serving REST on port " << rest->port();
  }
  const std::string endpoints = absl::GetFlag(FLAGS_endpoints_file);
  if (!endpoints.empty()) {
    std::map<std::string, std::string> fields = {{"grpc", gradsync::LoopbackAddress((*server)->port())}};
    if (metrics) fields["metrics"] = gradsync::LoopbackAddress(metrics->port());
    if (rest) fields["rest"] = gradsync::LoopbackAddress(rest->port());
    if (absl::Status s = gradsync::WriteEndpointsFile(endpoints, fields); !s.ok()) {
      GS_LOG(ERROR) << s;
      return 1;
    }
  }

  gradsync::WaitForShutdown();
  // Preemption: running jobs checkpoint before the coordinator goes, so they resume from here.
  const int saved = coordinator.CheckpointAllRunning(absl::Seconds(absl::GetFlag(FLAGS_preempt_checkpoint_timeout_s)));
  GS_LOG(INFO) << "shutting down (" << saved << " running jobs checkpointed)";
  coordinator.Shutdown();
  rest.reset();
  (*server)->Shutdown(absl::Seconds(2));
  metrics.reset();
  return 0;
}

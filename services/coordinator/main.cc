// gradsync-coordinator: job registry, gang scheduler, rendezvous store and worker leases.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "coordinator.h"
#include "coordinator_metrics.h"
#include "gradsync/core/daemon_flags.h"
#include "gradsync/core/endpoints_file.h"
#include "gradsync/core/env.h"
#include "gradsync/core/listen_guard.h"
#include "gradsync/core/log.h"
#include "gradsync/core/shutdown.h"
#include "gradsync/core/token_auth.h"
#include "gradsync/http/metrics.h"
#include "gradsync/http/process_metrics.h"
#include "gradsync/rpc/server.h"
#include "gradsync/spec/confined_path.h"
#include "grpc_services.h"
#include "rest_gateway.h"
#include "sqlite_job_store.h"

ABSL_FLAG(std::string, listen, gradsync::EnvOr("GRADSYNC_COORDINATOR_LISTEN", "0.0.0.0:7070"),
          "gRPC listen address host:port; port 0 picks a free port (env GRADSYNC_COORDINATOR_LISTEN)");
ABSL_FLAG(std::string, artifact_root, gradsync::EnvOr("GRADSYNC_ARTIFACT_ROOT", ""),
          "each job's weights and checkpoints go to <artifact_root>/<job id> and nowhere else; empty: "
          "--artifact_dir, else <state_dir>/artifacts, else /tmp/gradsync/artifacts (env GRADSYNC_ARTIFACT_ROOT)");
ABSL_FLAG(std::string, artifact_dir, gradsync::EnvOr("GRADSYNC_ARTIFACT_DIR", ""),
          "the former name of --artifact_root, read when that is empty (env GRADSYNC_ARTIFACT_DIR)");
ABSL_FLAG(std::vector<std::string>, data_root,
          std::vector<std::string>(absl::StrSplit(gradsync::EnvOr("GRADSYNC_DATA_ROOT", ""), ',', absl::SkipEmpty())),
          "comma-separated directories job data may be read from; relative data paths start at the first; empty: "
          "<state_dir>/data, or /tmp/gradsync/data without --state_dir (env GRADSYNC_DATA_ROOT)");
ABSL_FLAG(std::string, state_dir, gradsync::EnvOr("GRADSYNC_STATE_DIR", ""),
          "directory of the coordinator's database (jobs survive restarts); empty keeps jobs in memory "
          "only (env GRADSYNC_STATE_DIR)");
ABSL_FLAG(std::string, metrics_listen, gradsync::EnvOr("GRADSYNC_COORDINATOR_METRICS_LISTEN", "0.0.0.0:9465"),
          "Prometheus /metrics address host:port; port 0 picks a free port; empty disables "
          "(env GRADSYNC_COORDINATOR_METRICS_LISTEN)");
ABSL_FLAG(std::string, rest_listen, gradsync::EnvOr("GRADSYNC_REST_LISTEN", "0.0.0.0:8080"),
          "REST API address host:port; port 0 picks a free port; empty disables (env GRADSYNC_REST_LISTEN)");
ABSL_FLAG(std::string, auth_token_file, gradsync::EnvOr("GRADSYNC_AUTH_TOKEN_FILE", ""),
          "file holding the bearer token the job APIs (REST and gRPC) require; empty: no token, allowed only while "
          "--listen and --rest_listen are on loopback (env GRADSYNC_AUTH_TOKEN_FILE)");
ABSL_FLAG(std::string, cluster_token_file, gradsync::EnvOr("GRADSYNC_CLUSTER_TOKEN_FILE", ""),
          "file holding the token workers must present to join (CoordinatorService); empty: none, allowed only "
          "while --listen is on loopback (env GRADSYNC_CLUSTER_TOKEN_FILE)");
ABSL_FLAG(std::string, metrics_token_file, gradsync::EnvOr("GRADSYNC_METRICS_TOKEN_FILE", ""),
          "file holding the bearer token scrapes of /metrics (--metrics_listen) must present; empty: none, allowed "
          "only while --metrics_listen is on loopback (env GRADSYNC_METRICS_TOKEN_FILE)");
ABSL_FLAG(bool, insecure, false,
          "serve beyond loopback without the tokens: without them every listener off loopback is refused, since "
          "anyone who can reach it could run jobs, pose as a worker or read the metrics (a warning is logged on "
          "every start)");
ABSL_FLAG(std::string, tls_cert_file, gradsync::EnvOr("GRADSYNC_TLS_CERT_FILE", ""),
          "PEM certificate chain: gRPC and REST serve TLS with it and --tls_key_file (env GRADSYNC_TLS_CERT_FILE)");
ABSL_FLAG(std::string, tls_key_file, gradsync::EnvOr("GRADSYNC_TLS_KEY_FILE", ""),
          "PEM private key of --tls_cert_file (env GRADSYNC_TLS_KEY_FILE)");
ABSL_FLAG(int64_t, max_body_bytes, 1 << 20, "largest REST request body accepted (413 above)");
ABSL_FLAG(int64_t, preempt_checkpoint_timeout_s, 20,
          "on SIGTERM, how long to wait for running jobs to checkpoint before stopping");
ABSL_FLAG(int64_t, heartbeat_interval_ms, 1000, "how often workers heartbeat");
ABSL_FLAG(int64_t, lease_timeout_ms, 10000,
          "a worker silent for this long is declared lost; longer than --stall_timeout_ms plus two "
          "heartbeats, so that a frozen rank is diagnosed (Stalled) before it is lost");
ABSL_FLAG(int64_t, adopt_grace_ms, -1,
          "after a restart, how long a job found RUNNING keeps its generation for its workers to report back with "
          "the ranks they run (they train on meanwhile) before it restarts from its last checkpoint; negative: twice "
          "--lease_timeout_ms; 0: running jobs restart at once");
ABSL_FLAG(int64_t, stall_timeout_ms, 5000,
          "a generation with no finished collective or step for this long (or three step times) gets a "
          "Stalled event naming the rank behind");
ABSL_FLAG(int64_t, cancel_grace_ms, 30000,
          "a cancelled running job stops at its ranks' next step boundary, saving the weights; past this "
          "its ranks are aborted (0: cancels abort at once)");
ABSL_FLAG(int64_t, rendezvous_last_call_ms, 2000,
          "elastic jobs: once minWorkers are idle, how long to wait for more before starting with fewer");
ABSL_FLAG(int64_t, scale_up_delay_s, 30,
          "elastic jobs: a generation below maxWorkers grows into idle workers after running this long");
ABSL_FLAG(int64_t, max_model_bytes, gradsync::coordinator::kDefaultMaxModelBytes,
          "the most memory a worker gives one job's model: parameters, gradients and AdamW's two moments, 16 "
          "bytes a parameter (16 GiB by default); a larger model is refused at submission");
ABSL_FLAG(std::string, endpoints_file, "",
          "if set, write {\"grpc\": \"host:port\"} here once serving (for callers that asked for port 0)");

namespace {

using gradsync::coordinator::Coordinator;
using gradsync::coordinator::TokenAuth;

// Where the roots lie when neither they nor --state_dir are set.
constexpr char kDefaultRootsDir[] = "/tmp/gradsync";

// --artifact_root and --data_root, or their defaults, absolute and resolved; the artifact root is
// created.
absl::Status SetPathRoots(gradsync::coordinator::CoordinatorOptions* options) {
  const std::string state_dir = absl::GetFlag(FLAGS_state_dir);
  const std::filesystem::path base(state_dir.empty() ? kDefaultRootsDir : state_dir);
  std::string artifact_root = absl::GetFlag(FLAGS_artifact_root);
  if (artifact_root.empty()) artifact_root = absl::GetFlag(FLAGS_artifact_dir);
  if (artifact_root.empty()) artifact_root = (base / "artifacts").string();
  std::vector<std::string> data_roots = absl::GetFlag(FLAGS_data_root);
  if (data_roots.empty()) data_roots = {(base / "data").string()};
  std::error_code ec;
  std::filesystem::create_directories(artifact_root, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("--artifact_root ", artifact_root, ": ", ec.message()));
  auto artifacts = gradsync::spec::ConfinedRoots::Open({artifact_root}, "artifact root");
  if (!artifacts.ok()) return artifacts.status();
  auto data = gradsync::spec::ConfinedRoots::Open(data_roots, "data root");
  if (!data.ok()) return data.status();
  options->artifact_root = artifacts->dirs().front();
  options->data_roots = data->dirs();
  GS_LOG(INFO) << "job data is read from " << data->Describe() << "; each job writes to " << options->artifact_root
               << "/<job id>";
  for (const std::string& dir : data->dirs()) {
    if (!std::filesystem::is_directory(dir, ec)) {
      GS_LOG(WARNING) << "data root " << dir << " is no directory here: data paths are checked by name, and the "
                      << "workers check the files they read";
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<gradsync::coordinator::CoordinatorOptions> OptionsFromFlags() {
  gradsync::coordinator::CoordinatorOptions options;
  if (absl::Status s = SetPathRoots(&options); !s.ok()) return s;
  options.heartbeat_interval = absl::Milliseconds(absl::GetFlag(FLAGS_heartbeat_interval_ms));
  options.lease_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_lease_timeout_ms));
  if (const int64_t grace = absl::GetFlag(FLAGS_adopt_grace_ms); grace >= 0) {
    options.adopt_grace = absl::Milliseconds(grace);
  }
  options.rendezvous_last_call = absl::Milliseconds(absl::GetFlag(FLAGS_rendezvous_last_call_ms));
  options.scale_up_delay = absl::Seconds(absl::GetFlag(FLAGS_scale_up_delay_s));
  options.stall_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_stall_timeout_ms));
  options.cancel_grace = absl::Milliseconds(std::max<int64_t>(0, absl::GetFlag(FLAGS_cancel_grace_ms)));
  options.max_model_bytes = absl::GetFlag(FLAGS_max_model_bytes);
  if (const std::string state_dir = absl::GetFlag(FLAGS_state_dir); !state_dir.empty()) {
    options.job_log_file = (std::filesystem::path(state_dir) / "job_logs.db").string();
  }
  return options;
}

// SQLite under --state_dir, or memory when it is empty.
absl::StatusOr<std::unique_ptr<gradsync::coordinator::JobStore>> OpenStore() {
  const std::string state_dir = absl::GetFlag(FLAGS_state_dir);
  if (state_dir.empty()) {
    GS_LOG(WARNING) << "no --state_dir: jobs are kept in memory and lost when the coordinator stops";
    return std::make_unique<gradsync::coordinator::InMemoryJobStore>();
  }
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  auto sqlite = gradsync::coordinator::SqliteJobStore::Open(state_dir + "/coordinator.db");
  if (!sqlite.ok()) return sqlite.status();
  GS_LOG(INFO) << "jobs are kept in " << state_dir << "/coordinator.db";
  return std::unique_ptr<gradsync::coordinator::JobStore>(*std::move(sqlite));
}

// The token in `path` (none when empty); `what` names it in errors, `who` in the log line.
absl::StatusOr<TokenAuth> LoadToken(const std::string& path, const std::string& what, const std::string& who) {
  if (path.empty()) return TokenAuth();
  auto loaded = TokenAuth::FromFile(path, what);
  if (!loaded.ok()) return loaded.status();
  GS_LOG(INFO) << who << " (from " << path << ")";
  return loaded;
}

// Every listener beyond loopback needs the tokens of what it serves, unless --insecure.
absl::Status CheckListeners() {
  const bool auth = !absl::GetFlag(FLAGS_auth_token_file).empty();
  const bool cluster = !absl::GetFlag(FLAGS_cluster_token_file).empty();
  const bool metrics = !absl::GetFlag(FLAGS_metrics_token_file).empty();
  return gradsync::CheckListenersGuarded(
      {{"--listen", absl::GetFlag(FLAGS_listen), {{"--cluster_token_file", cluster}, {"--auth_token_file", auth}}},
       {"--rest_listen", absl::GetFlag(FLAGS_rest_listen), {{"--auth_token_file", auth}}},
       {"--metrics_listen", absl::GetFlag(FLAGS_metrics_listen), {{"--metrics_token_file", metrics}}}},
      absl::GetFlag(FLAGS_insecure));
}

// The HTTP servers beside gRPC; each is null when its flag is empty.
struct HttpServers {
  std::unique_ptr<gradsync::http::Server> metrics;
  std::unique_ptr<gradsync::coordinator::RestGateway> rest;
};

absl::StatusOr<HttpServers> StartHttp(Coordinator* coordinator, const TokenAuth& auth,
                                      std::shared_ptr<prometheus::Collectable> metrics) {
  HttpServers servers;
  if (const std::string listen = absl::GetFlag(FLAGS_metrics_listen); !listen.empty()) {
    auto scrape = gradsync::TokenAuth::FromOptionalFile(absl::GetFlag(FLAGS_metrics_token_file), "the metrics token");
    if (!scrape.ok()) return scrape.status();
    auto started =
        gradsync::http::StartMetricsServer(listen, {metrics, gradsync::http::ProcessMetrics()}, *std::move(scrape));
    if (!started.ok()) return started.status();
    servers.metrics = *std::move(started);
    GS_LOG(INFO) << "serving /metrics on port " << servers.metrics->port();
  }
  if (const std::string listen = absl::GetFlag(FLAGS_rest_listen); !listen.empty()) {
    gradsync::coordinator::RestOptions rest;
    rest.listen = listen;
    rest.max_body_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_max_body_bytes));
    rest.auth = auth;
    rest.tls_cert_file = absl::GetFlag(FLAGS_tls_cert_file);
    rest.tls_key_file = absl::GetFlag(FLAGS_tls_key_file);
    auto gateway = gradsync::coordinator::RestGateway::Start(coordinator, rest);
    if (!gateway.ok()) return gateway.status();
    servers.rest = *std::move(gateway);
    GS_LOG(INFO) << "serving REST on port " << servers.rest->port();
  }
  return servers;
}

absl::Status WriteEndpoints(int grpc_port, const HttpServers& http) {
  const std::string path = absl::GetFlag(FLAGS_endpoints_file);
  if (path.empty()) return absl::OkStatus();
  std::map<std::string, std::string> fields = {{"grpc", gradsync::LoopbackAddress(grpc_port)}};
  if (http.metrics) fields["metrics"] = gradsync::LoopbackAddress(http.metrics->port());
  if (http.rest) fields["rest"] = gradsync::LoopbackAddress(http.rest->port());
  return gradsync::WriteEndpointsFile(path, fields);
}

// Serves until SIGTERM/SIGINT, then checkpoints running jobs (preemption) and drains.
absl::Status Run() {
  if (absl::Status s = CheckListeners(); !s.ok()) return s;
  auto store = OpenStore();
  if (!store.ok()) return store.status();
  auto options = OptionsFromFlags();
  if (!options.ok()) return options.status();
  Coordinator coordinator(*std::move(options), *std::move(store));
  auto auth = LoadToken(absl::GetFlag(FLAGS_auth_token_file), "the token", "job APIs require a bearer token");
  if (!auth.ok()) return auth.status();
  auto cluster_auth =
      LoadToken(absl::GetFlag(FLAGS_cluster_token_file), "the cluster token", "workers must present the cluster token");
  if (!cluster_auth.ok()) return cluster_auth.status();
  auto tls = gradsync::rpc::ServerTls::FromFiles(absl::GetFlag(FLAGS_tls_cert_file), absl::GetFlag(FLAGS_tls_key_file));
  if (!tls.ok()) return tls.status();
  gradsync::coordinator::JobServiceImpl jobs(&coordinator, *auth);
  gradsync::coordinator::CoordinatorServiceImpl workers(&coordinator, *cluster_auth);
  gradsync::coordinator::JobLogServiceImpl job_logs(&coordinator, *auth);
  gradsync::coordinator::WorkerLogServiceImpl worker_logs(&coordinator, *cluster_auth);
  auto server =
      gradsync::rpc::StartServer(absl::GetFlag(FLAGS_listen), {&jobs, &workers, &job_logs, &worker_logs}, *tls);
  if (!server.ok()) return server.status();
  // grpc.health.v1 follows the store: NOT_SERVING while job writes fail.
  grpc::HealthCheckServiceInterface* health = (*server)->server()->GetHealthCheckService();
  coordinator.OnStoreHealthChange([health](const absl::Status& store) {
    if (health != nullptr) health->SetServingStatus(store.ok());
  });
  coordinator.Start();
  // The metrics server holds the collectable weakly: this owns it until the servers are gone.
  auto coordinator_metrics = std::make_shared<gradsync::coordinator::CoordinatorMetrics>(&coordinator);
  auto http = StartHttp(&coordinator, *auth, coordinator_metrics);
  if (!http.ok()) return http.status();
  GS_LOG(INFO) << "serving gRPC" << (tls->enabled() ? " over TLS" : "") << " on port " << (*server)->port()
               << " (JobService, JobLogService, CoordinatorService, WorkerLogService, health, reflection)";
  if (absl::Status s = WriteEndpoints((*server)->port(), *http); !s.ok()) return s;

  gradsync::WaitForShutdown();
  const int saved = coordinator.CheckpointAllRunning(absl::Seconds(absl::GetFlag(FLAGS_preempt_checkpoint_timeout_s)),
                                                     gradsync::ShutdownRequestedAt());
  GS_LOG(INFO) << "shutting down (" << saved << " running jobs checkpointed)";
  coordinator.Shutdown();
  http->rest.reset();
  (*server)->Shutdown(absl::Seconds(2));
  coordinator.OnStoreHealthChange(nullptr);
  http->metrics.reset();
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  gradsync::ParseDaemonFlags(argc, argv,
                             {"gradsync-coordinator",
                              "the job registry, gang scheduler, rendezvous store and worker leases of gradsync\n\n"
                              "  gradsync-coordinator [--listen host:port] [flags]",
                              "services/coordinator/"});
  gradsync::SetLogComponent("coordinator");
  gradsync::InstallShutdownHandlers();
  if (absl::Status s = Run(); !s.ok()) {
    GS_LOG(ERROR) << s;
    return 1;
  }
  return 0;
}

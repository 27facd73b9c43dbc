// gradsync-metrics: reduces workers' step reports across ranks and publishes them to Prometheus
// (/metrics) and as JSON series.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "gradsync/core/daemon_flags.h"
#include "gradsync/core/endpoints_file.h"
#include "gradsync/core/env.h"
#include "gradsync/core/listen_guard.h"
#include "gradsync/core/log.h"
#include "gradsync/core/shutdown.h"
#include "gradsync/core/token_auth.h"
#include "metrics_server.h"

ABSL_FLAG(std::string, listen, gradsync::EnvOr("GRADSYNC_METRICS_LISTEN", "0.0.0.0:7071"),
          "gRPC listen address host:port; port 0 picks a free port (env GRADSYNC_METRICS_LISTEN)");
ABSL_FLAG(std::string, http_listen, gradsync::EnvOr("GRADSYNC_METRICS_HTTP_LISTEN", "0.0.0.0:9464"),
          "Prometheus /metrics listen address ip:port; port 0 picks a free port "
          "(env GRADSYNC_METRICS_HTTP_LISTEN)");
ABSL_FLAG(std::string, api_listen, gradsync::EnvOr("GRADSYNC_METRICS_API_LISTEN", "0.0.0.0:9466"),
          "JSON API (/v1/jobs/{job}/series) listen address ip:port; port 0 picks a free port "
          "(env GRADSYNC_METRICS_API_LISTEN)");
ABSL_FLAG(std::string, cluster_token_file, gradsync::EnvOr("GRADSYNC_CLUSTER_TOKEN_FILE", ""),
          "file holding the cluster token the workers' step reports (--listen) must carry; required when --listen "
          "is beyond loopback (env GRADSYNC_CLUSTER_TOKEN_FILE)");
ABSL_FLAG(std::string, metrics_token_file, gradsync::EnvOr("GRADSYNC_METRICS_TOKEN_FILE", ""),
          "file holding the bearer token readers of /metrics (--http_listen) and of the JSON API (--api_listen) "
          "present; required when either is beyond loopback (env GRADSYNC_METRICS_TOKEN_FILE)");
ABSL_FLAG(bool, insecure, false,
          "serve beyond loopback without the tokens above: anyone who can reach the ports can then send reports and "
          "read every job's figures (a warning is logged on every start)");
ABSL_FLAG(int64_t, step_timeout_ms, 30000,
          "a step still missing ranks this long after its first report is published as partial");
ABSL_FLAG(double, straggler_factor, 1.5,
          "a rank whose step time exceeds the step's median by this factor is flagged as a straggler");
ABSL_FLAG(int64_t, series_capacity, 2000, "reduced steps kept per job for the JSON series");
ABSL_FLAG(int64_t, job_idle_ttl_s, 3600, "a job without reports for this long is forgotten");
ABSL_FLAG(int64_t, max_label_sets, 16384,
          "Prometheus label sets kept at once (one per job, one per rank of a job); a report needing one more is "
          "refused until an idle job is forgotten");
ABSL_FLAG(std::string, endpoints_file, "",
          "if set, write {\"grpc\": ..., \"http\": ..., \"api\": ...} (127.0.0.1:port each) here once "
          "serving (for callers that asked for port 0)");

namespace {

// The options the flags describe: the tokens read, and every listener beyond loopback guarded by
// them unless --insecure.
absl::StatusOr<gradsync::metrics::MetricsServerOptions> OptionsFromFlags() {
  gradsync::metrics::MetricsServerOptions options;
  options.grpc_listen = absl::GetFlag(FLAGS_listen);
  options.http_listen = absl::GetFlag(FLAGS_http_listen);
  options.api_listen = absl::GetFlag(FLAGS_api_listen);
  const std::string cluster_token = absl::GetFlag(FLAGS_cluster_token_file);
  const std::string metrics_token = absl::GetFlag(FLAGS_metrics_token_file);
  absl::Status guarded = gradsync::CheckListenersGuarded(
      {{"--listen", options.grpc_listen, {{"--cluster_token_file", !cluster_token.empty()}}},
       {"--http_listen", options.http_listen, {{"--metrics_token_file", !metrics_token.empty()}}},
       {"--api_listen", options.api_listen, {{"--metrics_token_file", !metrics_token.empty()}}}},
      absl::GetFlag(FLAGS_insecure));
  if (!guarded.ok()) return guarded;
  auto report_auth = gradsync::TokenAuth::FromOptionalFile(cluster_token, "the cluster token");
  if (!report_auth.ok()) return report_auth.status();
  auto read_auth = gradsync::TokenAuth::FromOptionalFile(metrics_token, "the metrics token");
  if (!read_auth.ok()) return read_auth.status();
  options.report_auth = *std::move(report_auth);
  options.read_auth = *std::move(read_auth);
  options.reducer.step_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_step_timeout_ms));
  options.reducer.straggler_factor = absl::GetFlag(FLAGS_straggler_factor);
  options.reducer.series_capacity = static_cast<size_t>(absl::GetFlag(FLAGS_series_capacity));
  options.reducer.job_idle_ttl = absl::Seconds(absl::GetFlag(FLAGS_job_idle_ttl_s));
  options.max_label_sets = static_cast<size_t>(std::max<int64_t>(1, absl::GetFlag(FLAGS_max_label_sets)));
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  gradsync::ParseDaemonFlags(argc, argv,
                             {"gradsync-metrics",
                              "reduces workers' step reports across ranks, publishes them to Prometheus and as JSON\n\n"
                              "  gradsync-metrics [--listen host:port] [--http_listen ip:port] [flags]",
                              "services/metrics/"});
  gradsync::SetLogComponent("metrics");
  gradsync::InstallShutdownHandlers();

  auto options = OptionsFromFlags();
  if (!options.ok()) {
    GS_LOG(ERROR) << options.status();
    return 1;
  }
  auto server = gradsync::metrics::MetricsServer::Start(*std::move(options));
  if (!server.ok()) {
    GS_LOG(ERROR) << server.status();
    return 1;
  }
  GS_LOG(INFO) << "serving gRPC on port " << (*server)->grpc_port()
               << " (MetricsService, health, reflection), /metrics on port " << (*server)->http_port()
               << ", JSON API on port " << (*server)->api_port();
  const std::string endpoints = absl::GetFlag(FLAGS_endpoints_file);
  if (!endpoints.empty()) {
    absl::Status s =
        gradsync::WriteEndpointsFile(endpoints, {{"grpc", gradsync::LoopbackAddress((*server)->grpc_port())},
                                                 {"http", gradsync::LoopbackAddress((*server)->http_port())},
                                                 {"api", gradsync::LoopbackAddress((*server)->api_port())}});
    if (!s.ok()) {
      GS_LOG(ERROR) << s;
      return 1;
    }
  }

  gradsync::WaitForShutdown();
  GS_LOG(INFO) << "shutting down";
  (*server)->Shutdown(absl::Seconds(2));
  return 0;
}

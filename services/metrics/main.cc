// gradsync-metrics: reduces workers' step reports across ranks and publishes them to Prometheus
// (/metrics) and as JSON series.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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
ABSL_FLAG(int64_t, series_capacity, 2000,
          "points kept per job for the JSON series: the first step, older steps merged into buckets of equal size, "
          "and the newest --series_recent_steps as published");
ABSL_FLAG(int64_t, series_recent_steps, 500, "the newest steps of a job's series kept as published, never merged");
ABSL_FLAG(int64_t, job_idle_ttl_s, 3600,
          "a job without reports for this long leaves memory and Prometheus; with --state_dir its series stays "
          "on disk until --retention");
ABSL_FLAG(std::string, state_dir, gradsync::EnvOr("GRADSYNC_METRICS_STATE_DIR", ""),
          "directory of the series database (series.db, SQLite), so the jobs' series outlive a restart; empty: "
          "in memory only (env GRADSYNC_METRICS_STATE_DIR)");
ABSL_FLAG(std::string, retention, gradsync::EnvOr("GRADSYNC_METRICS_RETENTION", "30d"),
          "a stored job without a report for this long is deleted from --state_dir, e.g. 30d, 12h, 90m "
          "(env GRADSYNC_METRICS_RETENTION)");
ABSL_FLAG(int64_t, max_series, 250000,
          "Prometheus series kept at once, histogram buckets included (a job takes 29, each of its ranks 58); a "
          "report whose job or rank would pass it is refused until an idle job is forgotten");
ABSL_FLAG(std::string, endpoints_file, "",
          "if set, write {\"grpc\": ..., \"http\": ..., \"api\": ...} (127.0.0.1:port each) here once "
          "serving (for callers that asked for port 0)");

namespace {

// "30d", or anything absl::ParseDuration reads ("12h", "90m"); positive.
absl::StatusOr<absl::Duration> ParseRetention(const std::string& text) {
  absl::Duration d;
  bool parsed = false;
  if (int64_t days = 0; !text.empty() && text.back() == 'd') {
    parsed = absl::SimpleAtoi(text.substr(0, text.size() - 1), &days) && days <= 365 * 1000;
    d = absl::Hours(24 * days);
  } else {
    parsed = absl::ParseDuration(text, &d);
  }
  if (!parsed || d <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--retention: expected a positive duration such as 30d, 12h or 90m, got \"", text, "\""));
  }
  return d;
}

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
  options.reducer.series_capacity = static_cast<size_t>(std::max<int64_t>(1, absl::GetFlag(FLAGS_series_capacity)));
  options.reducer.series_recent = static_cast<size_t>(std::max<int64_t>(0, absl::GetFlag(FLAGS_series_recent_steps)));
  options.reducer.job_idle_ttl = absl::Seconds(absl::GetFlag(FLAGS_job_idle_ttl_s));
  absl::StatusOr<absl::Duration> retention = ParseRetention(absl::GetFlag(FLAGS_retention));
  if (!retention.ok()) return retention.status();
  options.writer.retention = *retention;
  options.state_dir = absl::GetFlag(FLAGS_state_dir);
  options.max_series = static_cast<size_t>(std::max<int64_t>(1, absl::GetFlag(FLAGS_max_series)));
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

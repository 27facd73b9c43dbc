// gradsync-metrics assembled: the collector behind MetricsService (gRPC, with health and
// reflection), Prometheus exposition at /metrics, and the JSON API. main() and in-process tests
// start it the same way.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gradsync/core/token_auth.h"
#include "gradsync/http/server.h"
#include "gradsync/rpc/server.h"
#include "gradsync/telemetry/step_reducer.h"
#include "grpc_service.h"
#include "json_api.h"
#include "metrics_collector.h"
#include "training_metrics.h"

namespace gradsync::metrics {

struct MetricsServerOptions {
  // Listening addresses; port 0 picks a free port (see the *_port() accessors).
  std::string grpc_listen = "0.0.0.0:7071";
  std::string http_listen = "0.0.0.0:9464";  // Prometheus /metrics
  std::string api_listen = "0.0.0.0:9466";   // JSON API
  // The bearer token a ReportSteps stream must carry (the cluster token workers hold); none: any.
  TokenAuth report_auth;
  // The bearer token readers of /metrics and of the JSON API present (the metrics token); none:
  // any.
  TokenAuth read_auth;
  telemetry::StepReducerOptions reducer;
  // Prometheus label sets kept at once (one per job, one per rank of a job); see TrainingMetrics.
  size_t max_label_sets = TrainingMetrics::kDefaultMaxLabelSets;
  // How often timed-out steps are published and idle jobs forgotten.
  absl::Duration tick_interval = absl::Seconds(1);
};

class MetricsServer {
 public:
  // Starts everything or nothing: UNAVAILABLE naming the address that could not be bound.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(MetricsServerOptions options);
  // Shutdown(absl::ZeroDuration()).
  ~MetricsServer();

  int grpc_port() const { return grpc_->port(); }
  int http_port() const { return exposition_->port(); }
  int api_port() const { return api_->port(); }
  MetricsCollector& collector() { return collector_; }

  // Marks gRPC NOT_SERVING, gives open report streams until `grace` to end, then stops the
  // ticker and both HTTP servers. Idempotent; not concurrently with itself.
  void Shutdown(absl::Duration grace);

 private:
  explicit MetricsServer(const MetricsServerOptions& options);

  void RunTicker(absl::Duration interval);

  TrainingMetrics metrics_;
  MetricsCollector collector_;
  MetricsServiceImpl service_;
  std::unique_ptr<rpc::RunningServer> grpc_;
  std::unique_ptr<http::Server> exposition_;  // /metrics
  std::unique_ptr<JsonApi> api_;
  absl::Notification stop_ticker_;
  std::thread ticker_;
  bool shut_down_ = false;
};

}  // namespace gradsync::metrics

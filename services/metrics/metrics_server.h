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
#include "series_store.h"
#include "series_writer.h"
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
  // Prometheus series kept at once (TrainingMetrics::kJobSeries a job, kRankSeries a rank).
  size_t max_series = TrainingMetrics::kDefaultMaxSeries;
  // How often timed-out steps are published and idle jobs forgotten.
  absl::Duration tick_interval = absl::Seconds(1);
  // Where the jobs' series are kept (<state_dir>/series.db, made with the directory when
  // missing); empty: in memory only, lost with the process and forgotten with an idle job.
  std::string state_dir;
  // How often changed series are written, and how long a stored job without reports is kept.
  SeriesWriterOptions writer;
};

class MetricsServer {
 public:
  // Starts everything or nothing: UNAVAILABLE naming the address that could not be bound, or
  // the series store's error when its database can neither be used nor moved aside
  // (SeriesStore::OpenOrSetAside).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(MetricsServerOptions options);
  // Shutdown(absl::ZeroDuration()).
  ~MetricsServer();

  int grpc_port() const { return grpc_->port(); }
  int http_port() const { return exposition_->port(); }
  int api_port() const { return api_->port(); }
  MetricsCollector& collector() { return collector_; }

  // Marks gRPC NOT_SERVING, gives open report streams until `grace` to end, then stops the
  // ticker, writes the series' last changes and stops both HTTP servers. Idempotent; not
  // concurrently with itself.
  void Shutdown(absl::Duration grace);

 private:
  explicit MetricsServer(const MetricsServerOptions& options);

  void RunTicker(absl::Duration interval);
  // Opens the store under options.state_dir, takes up what it holds and starts the writer.
  absl::Status StartStore(const MetricsServerOptions& options);

  std::unique_ptr<SeriesStore> store_;  // null without a state_dir
  TrainingMetrics metrics_;
  MetricsCollector collector_;
  std::unique_ptr<SeriesWriter> writer_;
  MetricsServiceImpl service_;
  std::unique_ptr<rpc::RunningServer> grpc_;
  std::unique_ptr<http::Server> exposition_;  // /metrics
  std::unique_ptr<JsonApi> api_;
  absl::Notification stop_ticker_;
  std::thread ticker_;
  bool shut_down_ = false;
};

}  // namespace gradsync::metrics

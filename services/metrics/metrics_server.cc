#include "metrics_server.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gradsync/http/metrics.h"
#include "gradsync/http/process_metrics.h"

namespace gradsync::metrics {

MetricsServer::MetricsServer(const MetricsServerOptions& options)
    : metrics_(options.max_series),
      collector_(options.reducer, &metrics_),
      service_(&collector_, options.report_auth) {}

MetricsServer::~MetricsServer() { Shutdown(absl::ZeroDuration()); }

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(MetricsServerOptions options) {
  options.reducer.track_series_changes = !options.state_dir.empty();
  std::unique_ptr<MetricsServer> s(new MetricsServer(options));
  if (!options.state_dir.empty()) {
    if (absl::Status started = s->StartStore(options); !started.ok()) return started;
  }
  auto exposition = http::StartMetricsServer(options.http_listen, {s->metrics_.registry(), http::ProcessMetrics()},
                                             options.read_auth);
  if (!exposition.ok()) return exposition.status();
  s->exposition_ = *std::move(exposition);

  absl::StatusOr<std::unique_ptr<JsonApi>> api = JsonApi::Start(options.api_listen, &s->collector_, options.read_auth);
  if (!api.ok()) return api.status();
  s->api_ = *std::move(api);

  absl::StatusOr<std::unique_ptr<rpc::RunningServer>> grpc = rpc::StartServer(options.grpc_listen, {&s->service_});
  if (!grpc.ok()) return grpc.status();
  s->grpc_ = *std::move(grpc);

  MetricsServer* raw = s.get();
  s->ticker_ = std::thread([raw, interval = options.tick_interval] { raw->RunTicker(interval); });
  return s;
}

absl::Status MetricsServer::StartStore(const MetricsServerOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(options.state_dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("--state_dir ", options.state_dir, ": ", ec.message()));
  auto store = SeriesStore::OpenOrSetAside((std::filesystem::path(options.state_dir) / "series.db").string());
  if (!store.ok()) return store.status();
  store_ = *std::move(store);
  if (absl::Status s = collector_.UseStore(store_.get()); !s.ok()) return s;
  writer_ = std::make_unique<SeriesWriter>(&collector_, store_.get(), &metrics_, options.writer);
  writer_->Start();
  return absl::OkStatus();
}

void MetricsServer::RunTicker(absl::Duration interval) {
  while (!stop_ticker_.WaitForNotificationWithTimeout(interval)) collector_.Tick();
}

void MetricsServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  if (grpc_ != nullptr) grpc_->Shutdown(grace);
  if (ticker_.joinable()) {
    stop_ticker_.Notify();
    ticker_.join();
  }
  if (writer_ != nullptr) writer_->Stop();
  api_.reset();
  exposition_.reset();
}

}  // namespace gradsync::metrics

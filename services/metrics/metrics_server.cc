#include "metrics_server.h"

#include <exception>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "prometheus/exposer.h"

namespace gradsync::metrics {

MetricsServer::MetricsServer(const MetricsServerOptions& options)
    : collector_(options.reducer, &metrics_), service_(&collector_) {}

MetricsServer::~MetricsServer() { Shutdown(absl::ZeroDuration()); }

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(MetricsServerOptions options) {
  std::unique_ptr<MetricsServer> s(new MetricsServer(options));
  try {
    s->exposer_ = std::make_unique<prometheus::Exposer>(options.http_listen, /*num_threads=*/2);
  } catch (const std::exception& e) {  // civetweb reports a failed bind by throwing
    return absl::UnavailableError(
        absl::StrCat("Prometheus exposer cannot listen on ", options.http_listen, ": ", e.what()));
  }
  s->exposer_->RegisterCollectable(s->metrics_.registry());
  std::vector<int> ports = s->exposer_->GetListeningPorts();
  if (ports.empty()) return absl::UnavailableError(absl::StrCat("not listening on ", options.http_listen));
  s->http_port_ = ports.front();

  absl::StatusOr<std::unique_ptr<JsonApi>> api = JsonApi::Start(options.api_listen, &s->collector_);
  if (!api.ok()) return api.status();
  s->api_ = *std::move(api);
  s->api_port_ = s->api_->port();

  absl::StatusOr<std::unique_ptr<rpc::RunningServer>> grpc =
      rpc::StartServer(options.grpc_listen, {&s->service_});
  if (!grpc.ok()) return grpc.status();
  s->grpc_ = *std::move(grpc);

  MetricsServer* raw = s.get();
  s->ticker_ = std::thread([raw, interval = options.tick_interval] { raw->RunTicker(interval); });
  return s;
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
  // civetweb notices a stop only when its listener's poll times out (up to 2 s): stop both HTTP
  // servers at once rather than one after the other.
  std::thread api_stopper([this] { api_.reset(); });
  exposer_.reset();
  api_stopper.join();
}

}  // namespace gradsync::metrics

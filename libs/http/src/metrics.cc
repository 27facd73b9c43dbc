#include "gradsync/http/metrics.h"

#include <utility>

#include "gradsync/http/bearer.h"
#include "prometheus/text_serializer.h"

namespace gradsync::http {
namespace {

constexpr char kMetricsPath[] = "/metrics";
// The Prometheus text exposition format, version 0.0.4.
constexpr char kExpositionType[] = "text/plain; version=0.0.4; charset=utf-8";

std::string Exposition(const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables) {
  std::vector<prometheus::MetricFamily> families;
  for (const std::weak_ptr<prometheus::Collectable>& weak : collectables) {
    const std::shared_ptr<prometheus::Collectable> collectable = weak.lock();
    if (collectable == nullptr) continue;
    std::vector<prometheus::MetricFamily> more = collectable->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace

Handler MetricsHandler(std::vector<std::weak_ptr<prometheus::Collectable>> collectables) {
  return [collectables = std::move(collectables)](const Request& request) {
    if (request.path != kMetricsPath) return Reply{404, "not found: only /metrics is served here\n", "text/plain", {}};
    if (request.method != "GET") return Reply{405, "use GET or HEAD\n", "text/plain", {{"Allow", "GET, HEAD"}}};
    return Reply{200, Exposition(collectables), kExpositionType, {}};
  };
}

absl::StatusOr<std::unique_ptr<Server>> StartMetricsServer(
    const std::string& listen, std::vector<std::weak_ptr<prometheus::Collectable>> collectables, TokenAuth auth) {
  ServerOptions options;
  options.listen = listen;
  options.name = "/metrics";
  options.threads = 2;
  options.max_body_bytes = 4096;  // a scrape has no body
  options.body_auth = auth;
  options.io_timeout = absl::Seconds(10);
  options.priority_paths = {"/metrics"};  // a scrape is answered while other requests hold the threads
  return Server::Start(std::move(options), RequireBearer(std::move(auth), MetricsHandler(std::move(collectables))));
}

}  // namespace gradsync::http

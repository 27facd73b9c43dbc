// The JSON API of gradsync-metrics, on a server of its own (libs/http):
//
//   GET /v1/jobs                      -> gradsync.v1.JobList
//   GET /v1/jobs/{job}/series?limit=N -> gradsync.v1.JobSeries, the last N reduced steps (all
//                                        kept when N is absent or 0)
//
// Bodies are the protobuf JSON mapping (lowerCamelCase names, int64 as strings, zero values
// printed). Errors are http::ErrorJson's shape, {"code": 5, "status": "NOT_FOUND", "message": "...",
// "details": []}, with HTTP 400, 401 (a missing or wrong bearer token), 404 or 405.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "metrics_collector.h"

#include "gradsync/core/token_auth.h"
#include "gradsync/http/server.h"

namespace gradsync::metrics {

using HttpReply = http::Reply;

// The routing and encoding of one GET, without a server. `path` is URL-decoded; `limit` is the
// raw value of the limit query parameter ("" when absent).
HttpReply HandleApiGet(const MetricsCollector& collector, std::string_view path, std::string_view limit);

// Any request: GETs as HandleApiGet, other methods 405.
HttpReply HandleApi(const MetricsCollector& collector, const http::Request& request);

class JsonApi {
 public:
  // Serves the API on `address` ("ip:port"; port 0 picks a free one) until destroyed; with `auth`
  // enabled a request without its bearer token gets 401. `collector` must outlive it. UNAVAILABLE
  // when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<JsonApi>> Start(const std::string& address, const MetricsCollector* collector,
                                                        TokenAuth auth = TokenAuth());

  int port() const { return server_->port(); }

 private:
  JsonApi() = default;

  std::unique_ptr<http::Server> server_;
};

}  // namespace gradsync::metrics

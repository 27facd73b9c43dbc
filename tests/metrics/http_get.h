// A minimal HTTP/1.0 GET for tests: enough to scrape /metrics and read the JSON API without a
// client library.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace gradsync::metrics::testing {

struct HttpResponse {
  int status = 0;
  std::string body;
};

// GETs `path` from `host_port` ("127.0.0.1:9464"). UNAVAILABLE when the connection fails,
// INTERNAL when the answer is not HTTP.
absl::StatusOr<HttpResponse> HttpGet(const std::string& host_port, const std::string& path);

}  // namespace gradsync::metrics::testing

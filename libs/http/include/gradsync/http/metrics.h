// Prometheus exposition for any gradsync process: GET (and HEAD) /metrics renders the
// collectables through prometheus-cpp's text serializer at scrape time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/core/token_auth.h"
#include "gradsync/http/server.h"
#include "prometheus/collectable.h"

namespace gradsync::http {

// A handler serving /metrics (404 elsewhere, 405 for other methods). It holds the collectables
// weakly: one that is gone is skipped, so the owner decides their lifetime.
Handler MetricsHandler(std::vector<std::weak_ptr<prometheus::Collectable>> collectables);

// A server of its own for /metrics on `listen`; with `auth` enabled a scrape must present that
// bearer token (Prometheus: authorization.credentials_file). Errors as Server::Start.
absl::StatusOr<std::unique_ptr<Server>> StartMetricsServer(
    const std::string& listen, std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
    TokenAuth auth = TokenAuth());

}  // namespace gradsync::http

// One HTTP(S) server for every gradsync service: the coordinator's REST API, the metrics service's
// JSON API and every /metrics. A service hands in one Handler that routes plain requests to plain
// replies; the server owns the listening socket, TLS, the worker threads, size and time limits,
// and the errors it raises itself (no route, a body over the limit, a malformed request).
//
// Handlers run on the server's own threads (normal 8 MiB stacks), several at once: a handler must
// be thread-safe, and a slow client only ever holds one thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gradsync::http {

struct Request {
  // GET, POST, PUT, PATCH, DELETE or OPTIONS. A HEAD request reaches the handler as GET and the
  // server sends only the head of the reply.
  std::string method;
  std::string path;                                        // percent-decoded, without the query
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in order
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // The first query parameter or header named `name` (headers case-insensitively); "" if absent.
  std::string Query(absl::string_view name) const;
  std::string Header(absl::string_view name) const;
};

struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra response headers
};

using Handler = std::function<Reply(const Request&)>;

struct ServerOptions {
  // "host:port", "[v6]:port" or ":port" (all interfaces); port 0 picks a free one.
  std::string listen;
  // Names the server in errors and logs ("REST", "/metrics", ...).
  std::string name = "HTTP";
  // PEM certificate chain and private key: HTTPS when set (both or neither).
  std::string tls_cert_file;
  std::string tls_key_file;
  // Larger request bodies are refused with 413 before the handler runs.
  size_t max_body_bytes = 1 << 20;
  // Requests served at once.
  int threads = 4;
  // Bound on reading a request and writing a reply.
  absl::Duration io_timeout = absl::Seconds(30);
  // Renders an error the server raises itself (404 no route, 413, 400) in the service's format.
  // Plain text when unset.
  std::function<Reply(int status, std::string message)> error_reply;
};

class Server {
 public:
  // Binds and starts serving `handler`. INVALID_ARGUMENT for a malformed address, half a TLS
  // pair, or a certificate or key that cannot be used (naming the file); UNAVAILABLE naming the
  // address when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<Server>> Start(ServerOptions options, Handler handler);
  // Stops accepting, lets the requests in flight finish and joins every thread.
  ~Server();

  int port() const { return port_; }
  bool tls() const { return tls_; }

 private:
  class Impl;
  Server() = default;

  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  bool tls_ = false;
};

// Splits "host:port" ("[v6]:port", ":port") into the host (brackets removed, "" for all
// interfaces) and the port. INVALID_ARGUMENT naming `what` and the address otherwise.
absl::StatusOr<std::pair<std::string, int>> ParseListenAddress(absl::string_view address, absl::string_view what);

}  // namespace gradsync::http

// One HTTP(S) server for every gradsync service: the coordinator's REST API, the metrics service's
// JSON API and every /metrics. A service hands in one Handler that routes plain requests to plain
// replies; the server owns the listening socket, TLS, the worker threads, size and time limits,
// and the errors it raises itself (no route, a body over the limit, a malformed request).
//
// Handlers run on the server's own threads (normal 8 MiB stacks), several at once: a handler must
// be thread-safe. A connection holds no thread until its whole request head has arrived, every
// time bound is a total (never reset by a byte trickling in), connections are capped in all and
// per client address, and GET/HEAD of `priority_paths` (/healthz) have a thread of their own, so
// slow or greedy clients cannot stop a liveness probe from being answered.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/core/token_auth.h"

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

// A body written piece by piece as the connection takes it (a large file), so that no reply is
// held whole in memory: `size` bytes in all, `read` giving the piece at `offset` (at most `max`
// bytes, at least one until `size`). Each piece must be taken by the client within the server's
// io_timeout. An error from `read`, or a client too slow, ends the connection before the body is
// whole, which the client sees as a short body.
struct BodySource {
  uint64_t size = 0;
  std::function<absl::Status(uint64_t offset, size_t max, std::string* piece)> read;
};

struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra response headers
  // When set, the body comes from here instead of `body`.
  std::shared_ptr<BodySource> stream = nullptr;
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
  // When enabled, a request that announces a body (a Content-Length above 0, or chunked) must carry
  // this bearer token in its head: otherwise it is answered 401 as soon as its head is in, and no
  // byte of its body is read, buffered or given a thread. For servers whose every route that takes
  // a body needs the token (the handler still checks every request as before).
  TokenAuth body_auth;
  // Requests served at once.
  int threads = 4;
  // A connection must deliver its whole request head (request line and headers, and the TLS
  // handshake before them) within this long of being accepted, or of its previous reply when
  // kept alive; else it is closed (with 408 when part of a head came). A total, so a client
  // sending one byte every few seconds gains nothing. Until then it holds no thread.
  absl::Duration header_timeout = absl::Seconds(10);
  // The total time for reading a request's body, and again for writing its reply.
  absl::Duration io_timeout = absl::Seconds(30);
  // A request head (request line and headers) larger than this is refused with 431.
  size_t max_head_bytes = 64 << 10;
  // Connections open at once, in all and from one client IP address (idle kept-alive ones
  // included). Over either limit a new connection is closed as soon as it is accepted, after a
  // 503 naming the limit on plain HTTP; it never reaches a thread.
  int max_connections = 256;
  int max_connections_per_client = 32;
  // GET and HEAD requests for exactly these paths are served by `priority_threads` threads of
  // their own, so a liveness probe or a scrape is answered while every other thread is busy.
  std::vector<std::string> priority_paths = {"/healthz"};
  int priority_threads = 1;
  // Renders an error the server raises itself (404 no route, 413, 400, and the refusals 408,
  // 431 and 503) in the service's format.
  // Plain text when unset.
  std::function<Reply(int status, std::string message)> error_reply;
};

class Server {
 public:
  // Binds and starts serving `handler`. INVALID_ARGUMENT for a malformed address, half a TLS
  // pair, or a certificate or key that cannot be used (naming the file); UNAVAILABLE naming the
  // address when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<Server>> Start(ServerOptions options, Handler handler);
  // Stops accepting, closes the connections still sending their heads or idle, lets the
  // requests in flight finish and joins every thread.
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

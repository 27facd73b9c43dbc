#include "gradsync/http/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "acceptor.h"
#include "connection_limits.h"
#include "httplib_bridge.h"
#include "tls_context.h"

namespace gradsync::http {
namespace {

// Every route takes every path: the service's Handler does the routing.
constexpr char kAnyPath[] = ".*";
// Requests one kept-alive connection carries before the server closes it.
constexpr int kMaxRequestsPerConnection = 100;

Request FromHttplib(const httplib::Request& in) {
  Request out;
  out.method = in.method == "HEAD" ? "GET" : in.method;
  out.path = in.path;
  out.query.assign(in.params.begin(), in.params.end());
  out.headers.assign(in.headers.begin(), in.headers.end());
  out.body = in.body;
  return out;
}

// A streamed body's pieces.
constexpr size_t kStreamPiece = size_t{1} << 20;

// The streamed body of the reply the handler just gave on this thread, for Serve() to write once
// httplib has written the head (httplib's own content providers stop at once: they ask whether its
// accept loop runs, and this library accepts connections itself).
thread_local std::shared_ptr<BodySource> pending_body;

void ToHttplib(const Reply& in, httplib::Response& out) {
  out.status = in.status;
  for (const auto& [name, value] : in.headers) out.set_header(name, value);
  if (in.stream != nullptr) out.set_header("Content-Length", absl::StrCat(in.stream->size));
  out.set_content(in.body, in.content_type);
}

Reply PlainError(int status, std::string message) {
  return Reply{status, absl::StrCat(message, "\n"), "text/plain; charset=utf-8", {}};
}

// What the server says when it refuses a request itself.
std::string RefusalMessage(const httplib::Request& req, int status, size_t max_body_bytes) {
  switch (status) {
    case 404: return absl::StrCat("no route ", req.path);
    case 413:
      // httplib reads form-encoded bodies (curl -d's default type) into parameters, up to 8 KiB.
      if (req.get_header_value("Content-Type") == "application/x-www-form-urlencoded" &&
          req.get_header_value<uint64_t>("Content-Length") <= max_body_bytes) {
        return "a form-encoded request body is limited to 8192 bytes; send it as "
               "Content-Type: application/json";
      }
      return absl::StrCat("request body exceeds the limit of ", max_body_bytes, " bytes");
    case 400: return "malformed HTTP request";
    default: return absl::StrCat("HTTP status ", status);
  }
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// A whole HTTP/1.1 reply that ends its connection, for the refusals sent outside httplib.
std::string RawReply(const Reply& r) {
  std::string out =
      absl::StrCat("HTTP/1.1 ", r.status, " ", ReasonPhrase(r.status), "\r\nContent-Type: ", r.content_type,
                   "\r\nContent-Length: ", r.body.size(), "\r\nConnection: close\r\n");
  for (const auto& [name, value] : r.headers) absl::StrAppend(&out, name, ": ", value, "\r\n");
  absl::StrAppend(&out, "\r\n", r.body);
  return out;
}

// Whether the request line at the start of `head` is a GET or HEAD of one of `paths`.
bool IsPriority(absl::string_view head, const std::vector<std::string>& paths) {
  const size_t method_end = head.find(' ');
  if (method_end == absl::string_view::npos) return false;
  const absl::string_view method = head.substr(0, method_end);
  if (method != "GET" && method != "HEAD") return false;
  const absl::string_view rest = head.substr(method_end + 1);
  const absl::string_view path = rest.substr(0, rest.find_first_of(" ?\r\n"));
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

}  // namespace

std::string Request::Query(absl::string_view name) const {
  for (const auto& [key, value] : query) {
    if (key == name) return value;
  }
  return "";
}

std::string Request::Header(absl::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(key, name)) return value;
  }
  return "";
}

absl::StatusOr<std::pair<std::string, int>> ParseListenAddress(absl::string_view address, absl::string_view what) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(what, " address \"", address, "\": expected host:port"));
  }
  std::string host(address.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return std::make_pair(host, port);
}

class Server::Impl {
 public:
  explicit Impl(ServerOptions options)
      : options_(std::move(options)),
        limits_(std::max(1, options_.max_connections), std::max(1, options_.max_connections_per_client)) {}
  ~Impl() {
    // Connections still sending heads close with the acceptor; queued and running requests finish.
    if (acceptor_ != nullptr) acceptor_->Stop();
    if (pool_ != nullptr) pool_->shutdown();
    if (priority_pool_ != nullptr) priority_pool_->shutdown();
  }

  absl::Status UseTls() {
    absl::StatusOr<TlsContext> tls = MakeTlsContext(options_.name, options_.tls_cert_file, options_.tls_key_file);
    if (!tls.ok()) return tls.status();
    tls_ = *std::move(tls);
    return absl::OkStatus();
  }

  void Configure(Handler handler) {
    server_.set_payload_max_length(options_.max_body_bytes);
    // httplib's default adds SO_REUSEPORT, which would let a second server share a busy port.
    server_.set_socket_options([](int fd) {
      const int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    });
    auto serve = [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
      Reply reply = handler(FromHttplib(req));
      if (reply.stream != nullptr && req.method != "HEAD") pending_body = reply.stream;
      ToHttplib(reply, res);
    };
    // httplib answers HEAD through the GET route and sends only the head.
    server_.Get(kAnyPath, serve).Post(kAnyPath, serve).Put(kAnyPath, serve);
    server_.Patch(kAnyPath, serve).Delete(kAnyPath, serve).Options(kAnyPath, serve);
    error_reply_ = options_.error_reply ? options_.error_reply : PlainError;
    server_.set_error_handler(
        httplib::Server::HandlerWithResponse([error_reply = error_reply_, max = options_.max_body_bytes](
                                                 const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // the handler's own reply
          ToHttplib(error_reply(res.status, RefusalMessage(req, res.status, max)), res);
          return httplib::Server::HandlerResponse::Handled;
        }));
    server_.set_exception_handler(
        [error_reply = error_reply_](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
          ToHttplib(error_reply(500, "internal error"), res);
        });
  }

  // Binds, then accepts and serves on threads of its own; returns the port.
  absl::StatusOr<int> Listen(const std::string& host, int port) {
    errno = 0;
    const std::string bind_host = host.empty() ? "0.0.0.0" : host;
    const int bound =
        port == 0 ? server_.bind_to_any_port(bind_host) : (server_.bind_to_port(bind_host, port) ? port : -1);
    if (bound <= 0) {
      return absl::UnavailableError(absl::StrCat("cannot serve ", options_.name, " on ", options_.listen, ": ",
                                                 errno != 0 ? std::strerror(errno) : "bind failed"));
    }
    pool_ = std::make_unique<httplib::ThreadPool>(static_cast<size_t>(std::max(1, options_.threads)));
    priority_pool_ = std::make_unique<httplib::ThreadPool>(static_cast<size_t>(std::max(1, options_.priority_threads)));
    AcceptorOptions a;
    a.header_timeout = options_.header_timeout;
    a.max_head_bytes = std::max<size_t>(options_.max_head_bytes, 1024);
    a.max_body_bytes = options_.max_body_bytes;
    a.tls = tls_.get();
    if (options_.body_auth.enabled()) {
      a.admit_body = [auth = options_.body_auth](const std::string& authorization) {
        return auth.Check(authorization).ok();
      };
    }
    a.limits = &limits_;
    a.refusal = [error_reply = error_reply_](int status, const std::string& message) {
      return RawReply(error_reply(status, message));
    };
    a.dispatch = [this](std::unique_ptr<Connection> c) { Dispatch(std::move(c)); };
    absl::StatusOr<std::unique_ptr<Acceptor>> acceptor = Acceptor::Create(server_.TakeListeningSocket(), std::move(a));
    if (!acceptor.ok()) return acceptor.status();
    acceptor_ = *std::move(acceptor);
    acceptor_->Start();  // only now: Serve() reaches the acceptor through acceptor_
    return bound;
  }

 private:
  // On the acceptor's thread: queues a connection whose head has arrived.
  void Dispatch(std::unique_ptr<Connection> c) {
    httplib::ThreadPool& pool = IsPriority(c->buffered(), options_.priority_paths) ? *priority_pool_ : *pool_;
    // httplib's queue takes copyable functions only.
    auto held = std::make_shared<std::unique_ptr<Connection>>(std::move(c));
    pool.enqueue([this, held] { Serve(std::move(*held)); });
  }

  // On a pool thread: one request, then the connection goes back to wait for its next head.
  void Serve(std::unique_ptr<Connection> c) {
    RequestStream stream(*c, options_.io_timeout);
    c->CountServed();
    pending_body.reset();
    const bool reusable = server_.ServeOne(stream, c->served() >= kMaxRequestsPerConnection);
    const std::shared_ptr<BodySource> body = std::move(pending_body);
    if (body != nullptr && !WriteBody(*c, *body)) return;
    if (!reusable) return;
    acceptor_->Return(std::move(c));
  }

  // A streamed body after its head, a piece at a time, each within io_timeout. False when it
  // could not all be written: the connection is then closed.
  bool WriteBody(Connection& c, const BodySource& body) const {
    std::string piece;
    for (uint64_t offset = 0; offset < body.size; offset += piece.size()) {
      const size_t max = static_cast<size_t>(std::min<uint64_t>(kStreamPiece, body.size - offset));
      if (!body.read(offset, max, &piece).ok() || piece.empty() || piece.size() > max) return false;
      if (c.Write(piece.data(), piece.size(), absl::Now() + options_.io_timeout) < 0) return false;
    }
    return true;
  }

  const ServerOptions options_;
  std::function<Reply(int, std::string)> error_reply_;
  RequestServer server_;
  TlsContext tls_;
  ConnectionLimits limits_;
  std::unique_ptr<httplib::ThreadPool> pool_;
  std::unique_ptr<httplib::ThreadPool> priority_pool_;
  std::unique_ptr<Acceptor> acceptor_;
};

absl::StatusOr<std::unique_ptr<Server>> Server::Start(ServerOptions options, Handler handler) {
  absl::StatusOr<std::pair<std::string, int>> address = ParseListenAddress(options.listen, options.name);
  if (!address.ok()) return address.status();
  const bool tls = !options.tls_cert_file.empty();
  if (tls != !options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.name, " TLS needs both a certificate file and a key file, or neither"));
  }
  std::unique_ptr<Server> s(new Server());
  s->impl_ = std::make_unique<Impl>(std::move(options));
  if (tls) {
    if (absl::Status status = s->impl_->UseTls(); !status.ok()) return status;
  }
  s->impl_->Configure(std::move(handler));
  absl::StatusOr<int> port = s->impl_->Listen(address->first, address->second);
  if (!port.ok()) return port.status();
  s->port_ = *port;
  s->tls_ = tls;
  return s;
}

Server::~Server() = default;

}  // namespace gradsync::http

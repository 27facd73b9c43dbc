#include "gradsync/http/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tls_context.h"

namespace gradsync::http {
namespace {

// Every route takes every path: the service's Handler does the routing.
constexpr char kAnyPath[] = ".*";

Request FromHttplib(const httplib::Request& in) {
  Request out;
  out.method = in.method == "HEAD" ? "GET" : in.method;
  out.path = in.path;
  out.query.assign(in.params.begin(), in.params.end());
  out.headers.assign(in.headers.begin(), in.headers.end());
  out.body = in.body;
  return out;
}

void ToHttplib(const Reply& in, httplib::Response& out) {
  out.status = in.status;
  for (const auto& [name, value] : in.headers) out.set_header(name, value);
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
  explicit Impl(std::unique_ptr<httplib::Server> server) : server_(std::move(server)) {}
  ~Impl() {
    // stop() only takes effect once the loop runs; Start waits for that before returning.
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  httplib::Server& server() { return *server_; }

  void Configure(const ServerOptions& options, Handler handler) {
    const int threads = std::max(1, options.threads);
    server_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    const auto timeout = absl::ToChronoMicroseconds(options.io_timeout);
    server_->set_read_timeout(timeout).set_write_timeout(timeout);
    server_->set_payload_max_length(options.max_body_bytes);
    // httplib's default adds SO_REUSEPORT, which would let a second server share a busy port.
    server_->set_socket_options([](int fd) {
      const int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    });
    auto serve = [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
      ToHttplib(handler(FromHttplib(req)), res);
    };
    // httplib answers HEAD through the GET route and sends only the head.
    server_->Get(kAnyPath, serve).Post(kAnyPath, serve).Put(kAnyPath, serve);
    server_->Patch(kAnyPath, serve).Delete(kAnyPath, serve).Options(kAnyPath, serve);
    auto error_reply = options.error_reply ? options.error_reply : PlainError;
    server_->set_error_handler(httplib::Server::HandlerWithResponse(
        [error_reply, max = options.max_body_bytes](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // the handler's own reply
          ToHttplib(error_reply(res.status, RefusalMessage(req, res.status, max)), res);
          return httplib::Server::HandlerResponse::Handled;
        }));
    server_->set_exception_handler([error_reply](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      ToHttplib(error_reply(500, "internal error"), res);
    });
  }

  // Binds and serves on a thread of its own; returns the port.
  absl::StatusOr<int> Listen(const std::string& host, int port, const ServerOptions& options) {
    errno = 0;
    const std::string bind_host = host.empty() ? "0.0.0.0" : host;
    const int bound =
        port == 0 ? server_->bind_to_any_port(bind_host) : (server_->bind_to_port(bind_host, port) ? port : -1);
    if (bound <= 0) {
      return absl::UnavailableError(absl::StrCat("cannot serve ", options.name, " on ", options.listen, ": ",
                                                 errno != 0 ? std::strerror(errno) : "bind failed"));
    }
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return bound;
  }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

absl::StatusOr<std::unique_ptr<Server>> Server::Start(ServerOptions options, Handler handler) {
  absl::StatusOr<std::pair<std::string, int>> address = ParseListenAddress(options.listen, options.name);
  if (!address.ok()) return address.status();
  const bool tls = !options.tls_cert_file.empty();
  if (tls != !options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.name, " TLS needs both a certificate file and a key file, or neither"));
  }
  std::unique_ptr<httplib::Server> server;
  if (tls) {
    absl::StatusOr<std::unique_ptr<httplib::Server>> https =
        MakeTlsServer(options.name, options.tls_cert_file, options.tls_key_file);
    if (!https.ok()) return https.status();
    server = *std::move(https);
  } else {
    server = std::make_unique<httplib::Server>();
  }
  std::unique_ptr<Server> s(new Server());
  s->impl_ = std::make_unique<Impl>(std::move(server));
  s->impl_->Configure(options, std::move(handler));
  absl::StatusOr<int> port = s->impl_->Listen(address->first, address->second, options);
  if (!port.ok()) return port.status();
  s->port_ = *port;
  s->tls_ = tls;
  return s;
}

Server::~Server() = default;

}  // namespace gradsync::http

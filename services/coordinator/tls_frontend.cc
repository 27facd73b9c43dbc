#include "tls_frontend.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gradsync/core/log.h"

namespace gradsync::coordinator {
namespace {

// Connections served at once; more are refused rather than queued behind slow clients.
constexpr int kMaxConnections = 64;
// Bound on a TLS handshake and on any silence while relaying.
constexpr int kIoTimeoutSeconds = 30;
constexpr int kPollMillis = 200;

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return e == 0 ? "unknown OpenSSL error" : buf;
}

void SetTimeouts(int fd) {
  timeval tv{kIoTimeoutSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool SslWriteAll(SSL* ssl, const char* data, size_t n) {
  while (n > 0) {
    const int w = SSL_write(ssl, data, static_cast<int>(std::min<size_t>(n, 1 << 20)));
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

int ConnectLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  SetTimeouts(fd);
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TlsFrontend>> TlsFrontend::Start(const std::string& listen, int backend_port,
                                                                const std::string& cert_file,
                                                                const std::string& key_file) {
  std::unique_ptr<TlsFrontend> f(new TlsFrontend());
  f->backend_port_ = backend_port;
  f->ctx_ = SSL_CTX_new(TLS_server_method());
  if (f->ctx_ == nullptr) return absl::InternalError(absl::StrCat("REST TLS: ", OpenSslError()));
  SSL_CTX_set_min_proto_version(f->ctx_, TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(f->ctx_, cert_file.c_str()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("REST TLS: the certificate ", cert_file, ": ", OpenSslError()));
  }
  if (SSL_CTX_use_PrivateKey_file(f->ctx_, key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(f->ctx_) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("REST TLS: the key ", key_file, " does not fit the certificate ", cert_file, ": ", OpenSslError()));
  }

  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("REST listen address \"", listen, "\": expected host:port"));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(), &hints, &found);
      rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve REST on ", listen, ": ", gai_strerror(rc)));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr && f->listen_fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      f->listen_fd_ = fd;
    } else {
      error = std::strerror(errno);
      ::close(fd);
    }
  }
  freeaddrinfo(found);
  if (f->listen_fd_ < 0) return absl::UnavailableError(absl::StrCat("cannot serve REST on ", listen, ": ", error));
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(f->listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  f->port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  f->acceptor_ = std::thread([raw = f.get()] { raw->AcceptLoop(); });
  return f;
}

TlsFrontend::~TlsFrontend() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  {
    absl::MutexLock lock(&mu_);
    auto idle = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return active_ == 0; };
    mu_.Await(absl::Condition(&idle));
  }
  SSL_CTX_free(ctx_);
}

void TlsFrontend::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMillis) <= 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    {
      absl::MutexLock lock(&mu_);
      if (active_ >= kMaxConnections) {
        ::close(client);
        continue;
      }
      ++active_;
    }
    // Detached: the destructor waits for active_ to reach zero instead.
    std::thread([this, client] {
      Serve(client);
      absl::MutexLock lock(&mu_);
      --active_;
    }).detach();
  }
}

void TlsFrontend::Serve(int client) {
  SetTimeouts(client);
  SSL* ssl = SSL_new(ctx_);
  SSL_set_fd(ssl, client);
  int backend = -1;
  if (SSL_accept(ssl) == 1) backend = ConnectLoopback(backend_port_);
  if (backend >= 0) {
    char buf[16384];
    bool client_open = true;
    int quiet_polls = 0;
    while (!stop_ && quiet_polls * kPollMillis < kIoTimeoutSeconds * 1000) {
      pollfd p[2] = {{client, static_cast<short>(client_open ? POLLIN : 0), 0}, {backend, POLLIN, 0}};
      // Bytes OpenSSL already decrypted wait in its buffer, invisible to poll.
      const bool buffered = client_open && SSL_pending(ssl) > 0;
      if (::poll(p, 2, buffered ? 0 : kPollMillis) < 0) break;
      const bool from_client = buffered || (p[0].revents & (POLLIN | POLLHUP | POLLERR));
      const bool from_backend = p[1].revents & (POLLIN | POLLHUP | POLLERR);
      if (!from_client && !from_backend) {
        ++quiet_polls;
        continue;
      }
      quiet_polls = 0;
      if (from_client) {
        const int n = SSL_read(ssl, buf, sizeof(buf));
        if (n > 0) {
          if (!WriteAll(backend, buf, static_cast<size_t>(n))) break;
        } else {
          // The client finished sending (or went away): let the gateway see the end of input.
          client_open = false;
          ::shutdown(backend, SHUT_WR);
        }
      }
      if (from_backend) {
        const ssize_t n = ::recv(backend, buf, sizeof(buf), 0);
        if (n <= 0) {
          SSL_shutdown(ssl);
          break;
        }
        if (!SslWriteAll(ssl, buf, static_cast<size_t>(n))) break;
      }
    }
    ::close(backend);
  }
  SSL_free(ssl);
  ::close(client);
}

}  // namespace gradsync::coordinator

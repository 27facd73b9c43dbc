// HTTPS for the REST API. Debian's civetweb loads OpenSSL by name at run time and expects the
// OpenSSL 1.1 symbols; with OpenSSL 3 (Debian 12) one of them (SSL_get_peer_certificate) is only
// a macro, so civetweb's TLS either fails to start or crashes on the first handshake. TLS
// therefore ends here: a small front end accepts TLS connections on the public address with the
// OpenSSL the coordinator links, and relays each connection's bytes to the gateway's plain HTTP
// listener on loopback. Every gateway response closes its connection, so relays are short.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace gradsync::coordinator {

class TlsFrontend {
 public:
  // Listens on `listen` ("host:port"; port 0 picks one) with the PEM certificate chain and key,
  // relaying to 127.0.0.1:`backend_port`. INVALID_ARGUMENT naming the file for a bad certificate
  // or key, UNAVAILABLE if the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<TlsFrontend>> Start(const std::string& listen, int backend_port,
                                                            const std::string& cert_file, const std::string& key_file);
  // Stops accepting and waits for the connections in flight to end.
  ~TlsFrontend();

  int port() const { return port_; }

 private:
  TlsFrontend() = default;
  void AcceptLoop();
  void Serve(int client);

  SSL_CTX* ctx_ = nullptr;
  int listen_fd_ = -1;
  int port_ = 0;
  int backend_port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  absl::Mutex mu_;
  int active_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gradsync::coordinator

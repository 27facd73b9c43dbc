// Starting and stopping a gRPC server the way every gradsync service does: the given services
// plus grpc.health.v1 and server reflection, on one listening address.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/rpc/late_header.h"
#include "grpcpp/grpcpp.h"

namespace gradsync::rpc {

class RunningServer {
 public:
  RunningServer(std::unique_ptr<grpc::Server> server, int port);
  ~RunningServer();

  // The bound TCP port (the chosen one when the address asked for port 0).
  int port() const { return port_; }
  grpc::Server* server() { return server_.get(); }

  // Marks the server NOT_SERVING, stops accepting calls, and gives calls in flight until
  // `grace` to finish before cancelling them. Idempotent.
  void Shutdown(absl::Duration grace);

 private:
  std::unique_ptr<grpc::Server> server_;
  int port_;
  bool shut_down_ = false;
};

// TLS for a server: the PEM certificate chain and private key. Empty: plaintext.
struct ServerTls {
  std::string cert_pem;
  std::string key_pem;
  bool enabled() const { return !cert_pem.empty(); }
  // Reads both files; errors name the file.
  static absl::StatusOr<ServerTls> FromFiles(const std::string& cert_file, const std::string& key_file);
};

// Binds `address` ("host:port"; port 0 picks a free one) and starts serving `services`, which
// must outlive the server, over TLS when `tls` is enabled. Fails with UNAVAILABLE if the address
// cannot be bound.
absl::StatusOr<std::unique_ptr<RunningServer>> StartServer(const std::string& address,
                                                           const std::vector<grpc::Service*>& services,
                                                           const ServerTls& tls = {});

// The metadata key of the session a coordinator issues to each worker at registration; the
// worker sends it with every later call.
inline constexpr char kWorkerSessionMetadata[] = "gradsync-worker-session";

struct ChannelOptions {
  // PEM root certificates to verify the server with; non-empty makes the channel TLS.
  std::string tls_ca_pem;
  // The name the server's certificate is verified against, and sent as SNI, instead of the host
  // of the address dialled: a port-forward to 127.0.0.1 of a server whose certificate names its
  // Service. Used only with `tls_ca_pem`; callers refuse it without (see the CLI and worker flags).
  std::string tls_server_name;
  // Sent as "authorization: Bearer <token>" with every call when non-empty.
  std::string bearer_token;
  // Sent with every call while its value is non-empty (a worker's session).
  std::shared_ptr<const LateHeader> late_header;
  // Reads the CA file (if any) and the token file (if any); errors name the file, and a CA file
  // with no PEM certificate is INVALID_ARGUMENT.
  static absl::StatusOr<ChannelOptions> FromFiles(const std::string& ca_file, const std::string& token_file);
};

// OK for "" or a name a certificate can carry: a DNS name (letters, digits, '-', '.'; at most 253
// characters) or an IPv4 address. INVALID_ARGUMENT saying what is wrong otherwise; the caller
// names its flag.
absl::Status CheckTlsServerName(const std::string& name);

// A channel to `address` with the options gradsync clients use (keepalive, no proxy).
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, const ChannelOptions& options = {});

}  // namespace gradsync::rpc

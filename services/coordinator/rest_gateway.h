// The coordinator's REST API (civetweb), calling the same Coordinator logic as gRPC. Bodies and
// responses are protobuf's JSON mapping of the gradsync.v1 messages (lowerCamelCase).
//
//   POST /v1/jobs                 body: a JobSpec       -> Job
//   GET  /v1/jobs?pageSize=&pageToken=                  -> ListJobsResponse
//   GET  /v1/jobs/{id}                                  -> Job
//   POST /v1/jobs/{id}:cancel                           -> Job
//   GET  /v1/jobs/{id}/events                           -> {"events": [...]}
//   GET  /v1/jobs/{id}/checkpoints                      -> {"checkpoints": [...]} (committed)
//   POST /v1/jobs/{id}/checkpoints                      -> Job (checkpoint at the next step)
//   GET  /healthz                                       -> {"status": "SERVING"} (no token)
//
// Errors are {"code": "INVALID_ARGUMENT", "message": "training.worldSize: ...", "details": []}
// with the matching HTTP status (400, 401, 404, 409, 413, 500, 503).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "auth.h"
#include "coordinator.h"

class CivetServer;

namespace gradsync::coordinator {
class TlsFrontend;
}

namespace gradsync::coordinator {

struct RestOptions {
  std::string listen = "0.0.0.0:8080";  // port 0 picks a free port
  size_t max_body_bytes = 1 << 20;
  TokenAuth auth;
  // PEM certificate chain and key files: HTTPS when set (both or neither), through TlsFrontend.
  std::string tls_cert_file;
  std::string tls_key_file;
};

class RestGateway {
 public:
  // UNAVAILABLE if the address cannot be bound. `coordinator` must outlive the gateway.
  static absl::StatusOr<std::unique_ptr<RestGateway>> Start(Coordinator* coordinator, RestOptions options);
  ~RestGateway();

  int port() const { return port_; }

 private:
  class Handler;
  RestGateway() = default;

  std::unique_ptr<Handler> handler_;
  std::unique_ptr<CivetServer> server_;
  // HTTPS in front of server_ when TLS is on.
  std::unique_ptr<TlsFrontend> tls_;
  int port_ = 0;
};

// The HTTP status for a status code.
int HttpStatusOf(absl::StatusCode code);

}  // namespace gradsync::coordinator

// The coordinator's REST API (libs/http, HTTPS when TLS is configured), calling the same Coordinator logic as gRPC.
// Bodies and responses are protobuf's JSON mapping of the gradsync.v1 messages (lowerCamelCase).
//
//   POST /v1/jobs                 body: a JobSpec       -> Job
//   GET  /v1/jobs?pageSize=&pageToken=                  -> ListJobsResponse
//   GET  /v1/jobs/{id}                                  -> Job
//   POST /v1/jobs/{id}:cancel                           -> Job
//   GET  /v1/jobs/{id}/events                           -> {"events": [...]}
//   GET  /v1/jobs/{id}/checkpoints                      -> {"checkpoints": [...]} (committed)
//   POST /v1/jobs/{id}/checkpoints                      -> Job (checkpoint at the next step)
//   GET  /v1/jobs/{id}/artifacts?prefix=&sha256=true    -> ListArtifactsResponse ({"artifacts": [...]})
//   GET  /v1/jobs/{id}/artifacts/{path...}              -> the file's bytes (application/octet-stream), with
//                                                          Content-Length and X-Checksum-Sha256: <hex> of them;
//                                                          at most RestOptions::max_artifact_bytes (gRPC streams any)
//   GET  /v1/jobs/{id}/logs?rank=&afterSeq=&limit=     -> GetJobLogsResponse ({"lines": [...]}): the job's own log
//                                                          lines after afterSeq, oldest first
//   GET  /v1/workers                                    -> ListWorkersResponse ({"workers": [...]}): the pool,
//                                                          and the workers lost within the last hour
//   GET  /healthz                                       -> {"status": "SERVING"} (no token), or 503
//                                                          {"status": "NOT_SERVING"} while job writes fail
//
//   GET  /v1/openapi.json                               -> this API's OpenAPI 3 description (no token)
//
// Errors are http::ErrorJson's shape, {"code": 3, "status": "INVALID_ARGUMENT", "message":
// "training.worldSize: ...", "details": []}, with http::HttpStatusOf the code (405 for a method a
// route does not take). services/coordinator/openapi.json describes every route.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "auth.h"
#include "coordinator.h"

#include "gradsync/http/server.h"

namespace gradsync::coordinator {

inline constexpr int64_t kDefaultRestArtifactBytes = int64_t{1} << 30;

struct RestOptions {
  std::string listen = "0.0.0.0:8080";  // port 0 picks a free port
  size_t max_body_bytes = 1 << 20;
  TokenAuth auth;
  // The largest artifact GET /v1/jobs/{id}/artifacts/{path} serves: the reply carries its digest
  // before the bytes, so the file is read whole into memory first (413 beyond; gRPC streams any).
  int64_t max_artifact_bytes = kDefaultRestArtifactBytes;
  // PEM certificate chain and key files: HTTPS when set (both or neither).
  std::string tls_cert_file;
  std::string tls_key_file;
};

// The routing and encoding of one request, without a server: plain request in, reply out.
// `coordinator` must outlive it; thread-safe as the Coordinator is.
class RestApi {
 public:
  RestApi(Coordinator* coordinator, TokenAuth auth, int64_t max_artifact_bytes = kDefaultRestArtifactBytes)
      : c_(coordinator), auth_(std::move(auth)), max_artifact_bytes_(max_artifact_bytes) {}

  http::Reply Handle(const http::Request& request) const;

 private:
  http::Reply RouteJobs(const http::Request& request, const std::string& rest) const;
  http::Reply Create(const http::Request& request) const;
  http::Reply ListJobs(const http::Request& request) const;
  // GET /v1/jobs/{id}/logs?rank=&afterSeq=&limit=
  http::Reply Logs(const http::Request& request, const std::string& id) const;
  // GET /v1/jobs/{id}/artifacts (`path` null) or /v1/jobs/{id}/artifacts/{*path}.
  http::Reply Artifacts(const http::Request& request, const std::string& id, const std::string* path) const;

  Coordinator* c_;
  TokenAuth auth_;
  int64_t max_artifact_bytes_;
};

class RestGateway {
 public:
  // INVALID_ARGUMENT for a bad address or TLS file, UNAVAILABLE if the address cannot be bound.
  // `coordinator` must outlive the gateway.
  static absl::StatusOr<std::unique_ptr<RestGateway>> Start(Coordinator* coordinator, RestOptions options);

  int port() const { return server_->port(); }

 private:
  explicit RestGateway(RestApi api) : api_(std::move(api)) {}

  RestApi api_;
  std::unique_ptr<http::Server> server_;  // declared last: stops calling api_ first
};

}  // namespace gradsync::coordinator

// The one shape of an error answered by every gradsync JSON API (the coordinator's REST API and the
// metrics service's JSON API), in the JSON mapping of google.rpc.Status that grpc-gateway answers
// with, plus the code's name:
//
//   {"code": 3, "status": "INVALID_ARGUMENT", "message": "training.worldSize: ...", "details": []}
//
// `code` is the gRPC status code's number, `status` its canonical name, `message` names the field
// and the problem. The HTTP status follows the code (HttpStatusOf).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "gradsync/http/server.h"

namespace gradsync::http {

// The HTTP status a gRPC code is answered with: INVALID_ARGUMENT and OUT_OF_RANGE 400,
// UNAUTHENTICATED 401, PERMISSION_DENIED 403, NOT_FOUND 404, ALREADY_EXISTS, FAILED_PRECONDITION
// and ABORTED 409, RESOURCE_EXHAUSTED 413, UNIMPLEMENTED 501, UNAVAILABLE 503, DEADLINE_EXCEEDED
// 504, anything else 500.
int HttpStatusOf(absl::StatusCode code);

// The gRPC code a server-side HTTP refusal stands for, for the errors the server raises itself
// (ServerOptions::error_reply): 401 UNAUTHENTICATED, 404 NOT_FOUND, 405 UNIMPLEMENTED, 413
// RESOURCE_EXHAUSTED, 503 UNAVAILABLE, other 4xx INVALID_ARGUMENT, 5xx INTERNAL.
absl::StatusCode CodeOfHttpStatus(int http_status);

// The JSON body above for `status` (not OK). A message that is not valid UTF-8 (it may quote
// request bytes) has those bytes replaced, so the body is always valid JSON.
std::string ErrorJson(const absl::Status& status);

// `status` as a reply: HttpStatusOf its code, the ErrorJson body, and "WWW-Authenticate: Bearer"
// on 401.
Reply ErrorReply(const absl::Status& status);

// The same with the HTTP status given (405 for a method a route does not take, 408, 431, ...).
Reply ErrorReply(int http_status, const absl::Status& status);

}  // namespace gradsync::http

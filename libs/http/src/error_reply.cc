#include "gradsync/http/error_reply.h"

#include "absl/strings/str_cat.h"
#include "gradsync/core/json_string.h"

namespace gradsync::http {

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk: return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange: return 400;
    case absl::StatusCode::kUnauthenticated: return 401;
    case absl::StatusCode::kPermissionDenied: return 403;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted: return 409;
    case absl::StatusCode::kResourceExhausted: return 413;
    case absl::StatusCode::kUnimplemented: return 501;
    case absl::StatusCode::kUnavailable: return 503;
    case absl::StatusCode::kDeadlineExceeded: return 504;
    default: return 500;
  }
}

absl::StatusCode CodeOfHttpStatus(int http_status) {
  switch (http_status) {
    case 401: return absl::StatusCode::kUnauthenticated;
    case 404: return absl::StatusCode::kNotFound;
    case 405: return absl::StatusCode::kUnimplemented;
    case 413: return absl::StatusCode::kResourceExhausted;
    case 503: return absl::StatusCode::kUnavailable;
    default: return http_status < 500 ? absl::StatusCode::kInvalidArgument : absl::StatusCode::kInternal;
  }
}

std::string ErrorJson(const absl::Status& status) {
  std::string out = absl::StrCat("{\"code\": ", static_cast<int>(status.code()), ", \"status\": ");
  AppendJsonString(&out, absl::StatusCodeToString(status.code()));
  out += ", \"message\": ";
  AppendJsonString(&out, std::string_view(status.message().data(), status.message().size()));
  out += ", \"details\": []}";
  return out;
}

Reply ErrorReply(const absl::Status& status) { return ErrorReply(HttpStatusOf(status.code()), status); }

Reply ErrorReply(int http_status, const absl::Status& status) {
  Reply r{http_status, ErrorJson(status)};
  if (http_status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"gradsync\"");
  return r;
}

}  // namespace gradsync::http

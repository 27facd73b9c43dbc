#include "rest_answer.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/core/json_depth.h"
#include "gradsync/core/terminal_text.h"

namespace gradsync::cli {
namespace {

// The gRPC code an error body carries: its number ("code": 5), or, from a coordinator older than
// the shape with numbers, its name ("code": "NOT_FOUND").
bool CodeOf(const google::protobuf::Value& value, absl::StatusCode* code) {
  constexpr int kLast = static_cast<int>(absl::StatusCode::kUnauthenticated);
  if (value.kind_case() == google::protobuf::Value::kNumberValue) {
    const double n = value.number_value();
    if (n < 0 || n > kLast || n != static_cast<int>(n)) return false;
    *code = static_cast<absl::StatusCode>(static_cast<int>(n));
    return true;
  }
  for (int c = 0; c <= kLast; ++c) {
    if (absl::StatusCodeToString(static_cast<absl::StatusCode>(c)) == value.string_value()) {
      *code = static_cast<absl::StatusCode>(c);
      return true;
    }
  }
  return false;
}

absl::StatusCode CodeFromHttp(long status) {
  switch (status) {
    case 400: return absl::StatusCode::kInvalidArgument;
    case 401: return absl::StatusCode::kUnauthenticated;
    case 403: return absl::StatusCode::kPermissionDenied;
    case 404: return absl::StatusCode::kNotFound;
    case 409: return absl::StatusCode::kFailedPrecondition;
    case 413:
    case 429: return absl::StatusCode::kResourceExhausted;
    case 501: return absl::StatusCode::kUnimplemented;
    case 502:
    case 503: return absl::StatusCode::kUnavailable;
    case 504: return absl::StatusCode::kDeadlineExceeded;
    default: return status >= 500 ? absl::StatusCode::kInternal : absl::StatusCode::kUnknown;
  }
}

}  // namespace

absl::Status StatusFromHttpError(long http_status, const std::string& body, const std::string& url) {
  google::protobuf::Struct error;
  if (CheckJsonDepth(body, url).ok() && google::protobuf::util::JsonStringToMessage(body, &error).ok()) {
    const auto& f = error.fields();
    auto code = f.find("code");
    auto message = f.find("message");
    absl::StatusCode parsed;
    if (code != f.end() && message != f.end() && CodeOf(code->second, &parsed) && parsed != absl::StatusCode::kOk) {
      return absl::Status(parsed, TerminalSafe(message->second.string_value()));
    }
  }
  // Not the gateway's error format: show what came back, shortened.
  constexpr size_t kMaxBody = 200;
  std::string shown = body.size() > kMaxBody ? absl::StrCat(body.substr(0, kMaxBody), "...") : body;
  return absl::Status(CodeFromHttp(http_status),
                      absl::StrCat(url, " answered HTTP ", http_status, shown.empty() ? "" : ": ", TerminalSafe(shown)));
}


absl::Status ParseRestAnswer(long http_status, const std::string& body, const std::string& url,
                             google::protobuf::Message* out) {
  if (http_status < 200 || http_status >= 300) return StatusFromHttpError(http_status, body, url);
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (absl::Status deep = CheckJsonDepth(body, url); !deep.ok()) return absl::DataLossError(deep.message());
  if (auto s = google::protobuf::util::JsonStringToMessage(body, out, options); !s.ok()) {
    return absl::DataLossError(absl::StrCat(url, ": unreadable answer: ", TerminalSafe(s.ToString())));
  }
  return absl::OkStatus();
}

}  // namespace gradsync::cli

#include "json_api.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/http/bearer.h"
#include "gradsync/http/error_reply.h"

namespace gradsync::metrics {
namespace {

constexpr std::string_view kJobsPath = "/v1/jobs";
constexpr std::string_view kSeriesSuffix = "/series";

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string json;
  // Printing a valid message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

HttpReply Error(const absl::Status& status) { return http::ErrorReply(status); }

}  // namespace

HttpReply HandleApiGet(const MetricsCollector& collector, std::string_view path, std::string_view limit) {
  if (path == kJobsPath || path == "/v1/jobs/") return HttpReply{200, ToJson(collector.Jobs())};
  const std::string prefix = absl::StrCat(std::string(kJobsPath), "/");
  if (!path.starts_with(prefix) || !path.ends_with(kSeriesSuffix) ||
      path.size() <= prefix.size() + kSeriesSuffix.size()) {
    return Error(absl::NotFoundError(absl::StrCat("no such resource: ", std::string(path))));
  }
  const std::string job(path.substr(prefix.size(), path.size() - prefix.size() - kSeriesSuffix.size()));
  size_t n = 0;
  if (!limit.empty() && !absl::SimpleAtoi(std::string(limit), &n)) {
    return Error(absl::InvalidArgumentError(absl::StrCat("limit: not a count: ", std::string(limit))));
  }
  absl::StatusOr<v1::JobSeries> series = collector.Series(job, n);
  if (!series.ok()) return Error(series.status());
  return HttpReply{200, ToJson(*series)};
}

HttpReply HandleApi(const MetricsCollector& collector, const http::Request& request) {
  if (request.method != "GET") {
    return http::ErrorReply(
        405, absl::UnimplementedError(absl::StrCat(request.method, " is not allowed: the API is read-only, use GET")));
  }
  return HandleApiGet(collector, request.path, request.Query("limit"));
}

absl::StatusOr<std::unique_ptr<JsonApi>> JsonApi::Start(const std::string& address, const MetricsCollector* collector,
                                                        TokenAuth auth) {
  http::ServerOptions options;
  options.listen = address;
  options.name = "JSON API";
  options.threads = 2;
  options.max_body_bytes = 4096;  // GET only
  options.body_auth = auth;
  options.error_reply = [](int status, std::string message) {
    return http::ErrorReply(status, absl::Status(http::CodeOfHttpStatus(status), message));
  };
  auto routes = [collector](const http::Request& r) { return HandleApi(*collector, r); };
  auto guarded = http::RequireBearer(std::move(auth), routes, options.error_reply);
  auto server = http::Server::Start(std::move(options), std::move(guarded));
  if (!server.ok()) return server.status();
  std::unique_ptr<JsonApi> api(new JsonApi());
  api->server_ = *std::move(server);
  return api;
}

}  // namespace gradsync::metrics

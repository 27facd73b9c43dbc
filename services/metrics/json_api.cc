#include "json_api.h"

#include <exception>
#include <vector>

#include "CivetServer.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

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

HttpReply Error(absl::Status status) {
  int http = 500;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      http = 400;
      break;
    case absl::StatusCode::kNotFound:
      http = 404;
      break;
    case absl::StatusCode::kUnimplemented:
      http = 405;
      break;
    default:
      break;
  }
  google::protobuf::Struct body;
  (*body.mutable_fields())["code"].set_number_value(static_cast<int>(status.code()));
  (*body.mutable_fields())["message"].set_string_value(std::string(status.message()));
  return HttpReply{http, ToJson(body)};
}

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

class JsonApi::Handler : public CivetHandler {
 public:
  explicit Handler(const MetricsCollector* collector) : collector_(collector) {}

  bool handleGet(CivetServer*, mg_connection* conn) override {
    const mg_request_info* info = mg_get_request_info(conn);
    std::string limit;
    if (info->query_string != nullptr) CivetServer::getParam(info->query_string, "limit", limit);
    Send(conn, HandleApiGet(*collector_, info->local_uri != nullptr ? info->local_uri : "", limit));
    return true;
  }

  bool handlePost(CivetServer* server, mg_connection* conn) override { return NotAllowed(conn); }
  bool handlePut(CivetServer* server, mg_connection* conn) override { return NotAllowed(conn); }
  bool handleDelete(CivetServer* server, mg_connection* conn) override { return NotAllowed(conn); }
  bool handlePatch(CivetServer* server, mg_connection* conn) override { return NotAllowed(conn); }

 private:
  static bool NotAllowed(mg_connection* conn) {
    Send(conn, Error(absl::UnimplementedError("the API is read-only: use GET")));
    return true;
  }

  static void Send(mg_connection* conn, const HttpReply& reply) {
    const std::string length = absl::StrCat(reply.body.size());
    mg_response_header_start(conn, reply.status);
    mg_response_header_add(conn, "Content-Type", "application/json", -1);
    mg_response_header_add(conn, "Content-Length", length.c_str(), -1);
    mg_response_header_send(conn);
    mg_write(conn, reply.body.data(), reply.body.size());
  }

  const MetricsCollector* collector_;
};

absl::StatusOr<std::unique_ptr<JsonApi>> JsonApi::Start(const std::string& address,
                                                        const MetricsCollector* collector) {
  std::unique_ptr<JsonApi> api(new JsonApi());
  api->handler_ = std::make_unique<Handler>(collector);
  try {
    api->server_ = std::make_unique<CivetServer>(
        std::vector<std::string>{"listening_ports", address, "num_threads", "2"});
  } catch (const std::exception& e) {  // CivetServer reports a failed bind by throwing
    return absl::UnavailableError(absl::StrCat("JSON API cannot listen on ", address, ": ", e.what()));
  }
  api->server_->addHandler(std::string(kJobsPath), api->handler_.get());
  std::vector<int> ports = api->server_->getListeningPorts();
  if (ports.empty()) return absl::UnavailableError(absl::StrCat("JSON API not listening on ", address));
  api->port_ = ports.front();
  return api;
}

JsonApi::~JsonApi() {
  if (server_ != nullptr) server_->close();
}

}  // namespace gradsync::metrics

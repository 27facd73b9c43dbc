#include "rest_gateway.h"

#include <string>
#include <vector>

#include "CivetServer.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/core/log.h"
#include "gradsync/spec/job_spec.h"
#include "tls_frontend.h"

namespace gradsync::coordinator {
namespace {

constexpr char kJobsPrefix[] = "/v1/jobs";

struct Reply {
  int status = 200;
  std::string body;
};

Reply ErrorReply(const absl::Status& s) {
  google::protobuf::Struct error;
  auto& f = *error.mutable_fields();
  f["code"].set_string_value(absl::StatusCodeToString(s.code()));
  f["message"].set_string_value(std::string(s.message()));
  f["details"].mutable_list_value();
  Reply r{HttpStatusOf(s.code()), ""};
  (void)google::protobuf::util::MessageToJsonString(error, &r.body);
  return r;
}

template <typename Message>
Reply JsonReply(const absl::StatusOr<Message>& m) {
  if (!m.ok()) return ErrorReply(m.status());
  Reply r;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(*m, &r.body, opts);
  return r;
}

// Query parameter `name` from "a=1&b=2" (no percent-decoding: tokens and sizes are plain).
std::string QueryParam(const char* query, const std::string& name) {
  if (query == nullptr) return "";
  for (absl::string_view kv : absl::StrSplit(query, '&')) {
    std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.first == name) return p.second;
  }
  return "";
}

}  // namespace

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

class RestGateway::Handler : public CivetHandler {
 public:
  Handler(Coordinator* c, RestOptions options) : c_(c), options_(std::move(options)) {}

  bool handleGet(CivetServer*, mg_connection* conn) override { return Serve(conn, "GET"); }
  bool handlePost(CivetServer*, mg_connection* conn) override { return Serve(conn, "POST"); }
  bool handlePut(CivetServer*, mg_connection* conn) override { return Serve(conn, "PUT"); }
  bool handleDelete(CivetServer*, mg_connection* conn) override { return Serve(conn, "DELETE"); }

 private:
  bool Serve(mg_connection* conn, const std::string& method) {
    const mg_request_info* info = mg_get_request_info(conn);
    const std::string uri = info->local_uri != nullptr ? info->local_uri : "";
    Reply reply = Route(conn, info, method, uri);
    mg_printf(conn,
              "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s"
              "Connection: close\r\n\r\n",
              reply.status, mg_get_response_code_text(conn, reply.status), reply.body.size(),
              reply.status == 401 ? "WWW-Authenticate: Bearer realm=\"gradsync\"\r\n" : "");
    mg_write(conn, reply.body.data(), reply.body.size());
    return true;
  }

  Reply Route(mg_connection* conn, const mg_request_info* info, const std::string& method, const std::string& uri) {
    if (uri == "/healthz") return {200, "{\"status\": \"SERVING\"}"};
    if (!absl::StartsWith(uri, kJobsPrefix)) return ErrorReply(absl::NotFoundError(absl::StrCat("no route ", uri)));
    const char* authorization = CivetServer::getHeader(conn, "Authorization");
    if (absl::Status s = options_.auth.Check(authorization ? authorization : ""); !s.ok()) return ErrorReply(s);

    std::string rest = uri.substr(sizeof(kJobsPrefix) - 1);
    if (rest.empty() || rest == "/") {
      if (method == "POST") return Create(conn, info);
      if (method == "GET") {
        int page_size = 0;
        const std::string size = QueryParam(info->query_string, "pageSize");
        if (!size.empty() && !absl::SimpleAtoi(size, &page_size)) {
          return ErrorReply(absl::InvalidArgumentError(absl::StrCat("pageSize: expected an integer, got \"", size, "\"")));
        }
        return JsonReply(c_->ListJobs(page_size, QueryParam(info->query_string, "pageToken")));
      }
      return MethodNotAllowed(method, uri);
    }
    rest = rest.substr(1);  // drop the "/"
    if (absl::EndsWith(rest, ":cancel")) {
      if (method != "POST") return MethodNotAllowed(method, uri);
      return JsonReply(c_->CancelJob(rest.substr(0, rest.size() - 7)));
    }
    if (absl::EndsWith(rest, "/checkpoints")) {
      const std::string id = rest.substr(0, rest.size() - 12);
      if (method == "POST") return JsonReply(c_->RequestCheckpoint(id));
      if (method != "GET") return MethodNotAllowed(method, uri);
      auto job = c_->GetJob(id);
      if (!job.ok()) return ErrorReply(job.status());
      v1::Job only;
      *only.mutable_checkpoints() = job->checkpoints();
      Reply r = JsonReply(absl::StatusOr<v1::Job>(only));
      if (r.body == "{}") r.body = "{\"checkpoints\": []}";
      return r;
    }
    if (absl::EndsWith(rest, "/events")) {
      if (method != "GET") return MethodNotAllowed(method, uri);
      auto job = c_->GetJob(rest.substr(0, rest.size() - 7));
      if (!job.ok()) return ErrorReply(job.status());
      v1::Job events_only;
      *events_only.mutable_events() = job->events();
      Reply r = JsonReply(absl::StatusOr<v1::Job>(events_only));
      if (r.body == "{}") r.body = "{\"events\": []}";
      return r;
    }
    if (rest.find('/') != std::string::npos) return ErrorReply(absl::NotFoundError(absl::StrCat("no route ", uri)));
    if (method != "GET") return MethodNotAllowed(method, uri);
    return JsonReply(c_->GetJob(rest));
  }

  Reply Create(mg_connection* conn, const mg_request_info* info) {
    if (info->content_length > static_cast<long long>(options_.max_body_bytes)) {
      return ErrorReply(absl::ResourceExhaustedError(absl::StrCat(
          "request body of ", info->content_length, " bytes exceeds the limit of ", options_.max_body_bytes)));
    }
    std::string body;
    char buf[8192];
    for (int n; (n = mg_read(conn, buf, sizeof(buf))) > 0;) {
      body.append(buf, static_cast<size_t>(n));
      if (body.size() > options_.max_body_bytes) {
        return ErrorReply(absl::ResourceExhaustedError(
            absl::StrCat("request body exceeds the limit of ", options_.max_body_bytes, " bytes")));
      }
    }
    auto spec = spec::ParseJobSpec(body, "request body");
    if (!spec.ok()) return ErrorReply(spec.status());
    return JsonReply(c_->CreateJob(*std::move(spec)));
  }

  static Reply MethodNotAllowed(const std::string& method, const std::string& uri) {
    Reply r = ErrorReply(absl::InvalidArgumentError(absl::StrCat(method, " is not allowed on ", uri)));
    r.status = 405;
    return r;
  }

  Coordinator* c_;
  RestOptions options_;
};

absl::StatusOr<std::unique_ptr<RestGateway>> RestGateway::Start(Coordinator* coordinator, RestOptions options) {
  std::unique_ptr<RestGateway> g(new RestGateway());
  const bool tls = !options.tls_cert_file.empty();
  if (tls != !options.tls_key_file.empty()) {
    return absl::InvalidArgumentError("REST TLS needs both a certificate file and a key file, or neither");
  }
  // With TLS, civetweb serves plain HTTP on loopback behind the TLS front end (tls_frontend.h).
  const std::string listen = tls ? "127.0.0.1:0" : options.listen;
  const std::string public_listen = options.listen, cert = options.tls_cert_file, key = options.tls_key_file;
  g->handler_ = std::make_unique<Handler>(coordinator, std::move(options));
  try {
    g->server_ = std::make_unique<CivetServer>(
        std::vector<std::string>{"listening_ports", listen, "num_threads", "8", "request_timeout_ms", "30000"});
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve REST on ", listen, ": ", e.what()));
  }
  g->server_->addHandler("/v1/jobs", g->handler_.get());
  g->server_->addHandler("/healthz", g->handler_.get());
  const std::vector<int> ports = g->server_->getListeningPorts();
  g->port_ = ports.empty() ? 0 : ports.front();
  if (tls) {
    auto frontend = TlsFrontend::Start(public_listen, g->port_, cert, key);
    if (!frontend.ok()) return frontend.status();
    g->tls_ = *std::move(frontend);
    g->port_ = g->tls_->port();
  }
  return g;
}

RestGateway::~RestGateway() {
  tls_.reset();  // no new relays into the server being closed
  if (server_) server_->close();
}

}  // namespace gradsync::coordinator

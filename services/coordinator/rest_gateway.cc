#include "rest_gateway.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/http/error_reply.h"
#include "gradsync/spec/job_spec.h"
#include "openapi.h"

namespace gradsync::coordinator {
namespace {

using http::ErrorReply;

constexpr char kJobsPrefix[] = "/v1/jobs";
constexpr char kWorkersPath[] = "/v1/workers";
constexpr char kOpenApiPath[] = "/v1/openapi.json";
constexpr absl::string_view kArtifacts = "/artifacts";
constexpr absl::string_view kArtifactsDir = "/artifacts/";
// The lowercase hex SHA-256 of an artifact's bytes, as sha256sum prints it.
constexpr char kChecksumHeader[] = "X-Checksum-Sha256";

template <typename Message>
http::Reply JsonReply(const absl::StatusOr<Message>& m) {
  if (!m.ok()) return ErrorReply(m.status());
  http::Reply r;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  // A message that does not print (a value JSON cannot hold) is an error, never a cut body.
  if (const auto printed = google::protobuf::util::MessageToJsonString(*m, &r.body, opts); !printed.ok()) {
    return ErrorReply(
        absl::InternalError(absl::StrCat("the answer does not print as JSON: ", std::string(printed.message()))));
  }
  return r;
}

// As JsonReply, with the list `field` (its JSON name) printed as [] when empty: proto3's JSON
// leaves empty repeated fields out, and a client iterating over `jobs` should not need to know.
template <typename Message>
http::Reply JsonListReply(const absl::StatusOr<Message>& m, const std::string& field) {
  http::Reply r = JsonReply(m);
  if (!m.ok()) return r;
  google::protobuf::Struct object;
  if (!google::protobuf::util::JsonStringToMessage(r.body, &object).ok()) return r;
  if (object.fields().count(field) > 0) return r;
  (*object.mutable_fields())[field].mutable_list_value();
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  r.body.clear();
  (void)google::protobuf::util::MessageToJsonString(object, &r.body, opts);
  return r;
}

// A job reduced to one repeated field, printed as {"<field>": [...]} even when empty.
http::Reply JobPart(const absl::StatusOr<v1::Job>& job, bool checkpoints) {
  if (!job.ok()) return ErrorReply(job.status());
  v1::Job only;
  if (checkpoints) {
    *only.mutable_checkpoints() = job->checkpoints();
  } else {
    *only.mutable_events() = job->events();
  }
  return JsonListReply(absl::StatusOr<v1::Job>(only), checkpoints ? "checkpoints" : "events");
}

http::Reply MethodNotAllowed(const http::Request& request) {
  return http::ErrorReply(405,
                          absl::UnimplementedError(absl::StrCat(request.method, " is not allowed on ", request.path)));
}

http::Reply NoRoute(const std::string& path) {
  return ErrorReply(absl::NotFoundError(absl::StrCat("no route ", path)));
}

// SERVING while job writes succeed, 503 NOT_SERVING otherwise. Health needs no token, so it does
// not name the database: the log and the failing calls do.
http::Reply Health(const absl::Status& store) {
  if (store.ok()) return {200, "{\"status\": \"SERVING\"}"};
  return {503,
          "{\"status\": \"NOT_SERVING\", \"message\": \"job writes fail; the coordinator's log names the error\"}"};
}

}  // namespace

http::Reply RestApi::Handle(const http::Request& request) const {
  if (request.path == "/healthz") {
    if (request.method != "GET") return MethodNotAllowed(request);
    return Health(c_->StoreHealth());
  }
  // The description holds nothing of the cluster's: no token needed, as for /healthz.
  if (request.path == kOpenApiPath) {
    if (request.method != "GET") return MethodNotAllowed(request);
    return http::Reply{200, OpenApiDocument()};
  }
  const bool workers = request.path == kWorkersPath || request.path == absl::StrCat(kWorkersPath, "/");
  if (!workers && !absl::StartsWith(request.path, kJobsPrefix)) return NoRoute(request.path);
  if (absl::Status s = auth_.Check(request.Header("Authorization")); !s.ok()) return ErrorReply(s);
  if (workers) {
    if (request.method != "GET") return MethodNotAllowed(request);
    return JsonListReply(absl::StatusOr<v1::ListWorkersResponse>(c_->ListWorkers()), "workers");
  }
  const std::string rest = request.path.substr(sizeof(kJobsPrefix) - 1);
  if (rest.empty() || rest == "/") {
    if (request.method == "POST") return Create(request);
    if (request.method == "GET") return ListJobs(request);
    return MethodNotAllowed(request);
  }
  if (rest.front() != '/') return NoRoute(request.path);
  return RouteJobs(request, rest.substr(1));
}

// `rest` is the path after "/v1/jobs/".
http::Reply RestApi::RouteJobs(const http::Request& request, const std::string& rest) const {
  const std::string& method = request.method;
  // An artifact's path may end in anything (":cancel", "/events"): artifacts are routed first.
  if (const size_t slash = rest.find('/'); slash != std::string::npos) {
    const std::string id = rest.substr(0, slash);
    const absl::string_view tail = absl::string_view(rest).substr(slash);
    if (tail == kArtifacts || absl::StartsWith(tail, kArtifactsDir)) {
      if (method != "GET") return MethodNotAllowed(request);
      const std::string path(tail.substr(std::min(tail.size(), kArtifactsDir.size())));
      return Artifacts(request, id, path.empty() ? nullptr : &path);
    }
  }
  if (absl::EndsWith(rest, ":cancel")) {
    if (method != "POST") return MethodNotAllowed(request);
    return JsonReply(c_->CancelJob(rest.substr(0, rest.size() - 7)));
  }
  if (absl::EndsWith(rest, "/checkpoints")) {
    const std::string id = rest.substr(0, rest.size() - 12);
    if (method == "POST") return JsonReply(c_->RequestCheckpoint(id));
    if (method != "GET") return MethodNotAllowed(request);
    return JobPart(c_->GetJob(id), /*checkpoints=*/true);
  }
  if (absl::EndsWith(rest, "/logs")) {
    if (method != "GET") return MethodNotAllowed(request);
    return Logs(request, rest.substr(0, rest.size() - 5));
  }
  if (absl::EndsWith(rest, "/events")) {
    if (method != "GET") return MethodNotAllowed(request);
    return JobPart(c_->GetJob(rest.substr(0, rest.size() - 7)), /*checkpoints=*/false);
  }
  if (rest.find('/') != std::string::npos) return NoRoute(request.path);
  if (method != "GET") return MethodNotAllowed(request);
  return JsonReply(c_->GetJob(rest));
}

http::Reply RestApi::Artifacts(const http::Request& request, const std::string& id, const std::string* path) const {
  absl::StatusOr<JobArtifacts> artifacts = c_->Artifacts(id);
  if (!artifacts.ok()) return ErrorReply(artifacts.status());
  if (path == nullptr) {
    const std::string sha256 = request.Query("sha256");
    if (!sha256.empty() && sha256 != "true" && sha256 != "false") {
      return ErrorReply(
          absl::InvalidArgumentError(absl::StrCat("sha256: expected true or false, got \"", sha256, "\"")));
    }
    absl::StatusOr<v1::ListArtifactsResponse> listed = artifacts->List(request.Query("prefix"), sha256 == "true");
    if (listed.ok() && listed->artifacts().empty()) return http::Reply{200, "{\"artifacts\": []}\n"};
    return JsonListReply(listed, "artifacts");
  }
  absl::StatusOr<ArtifactFile> file = artifacts->Open(*path);
  if (!file.ok()) return ErrorReply(file.status());
  // The digest goes first, as a header: the file is read once for it, then again as the
  // connection takes its bytes, a piece at a time, so no download is held whole in memory. A file
  // that changes between the two reads gives the client a short body or a digest that does not
  // match, which it refuses.
  absl::StatusOr<std::string> sha256 = HashArtifact(*file, max_artifact_bytes_);
  if (!sha256.ok()) return ErrorReply(sha256.status());
  auto open = std::make_shared<ArtifactFile>(*std::move(file));
  auto source = std::make_shared<http::BodySource>();
  source->size = static_cast<uint64_t>(open->info().size_bytes());
  source->read = [open](uint64_t, size_t max, std::string* piece) { return open->Read(max, piece); };
  http::Reply reply{200, "", "application/octet-stream", {{kChecksumHeader, *sha256}}};
  reply.stream = std::move(source);
  return reply;
}

namespace {

// The integer query parameter `name` into `*out` (unchanged when absent); false when malformed.
bool QueryInt(const http::Request& request, const std::string& name, int64_t* out, http::Reply* error) {
  const std::string value = request.Query(name);
  if (value.empty()) return true;
  if (absl::SimpleAtoi(value, out)) return true;
  *error = ErrorReply(absl::InvalidArgumentError(absl::StrCat(name, ": expected an integer, got \"", value, "\"")));
  return false;
}

}  // namespace

http::Reply RestApi::Logs(const http::Request& request, const std::string& id) const {
  v1::GetJobLogsRequest req;
  req.set_name(id);
  int64_t rank = -1, after = 0, limit = 0;
  http::Reply error;
  if (!QueryInt(request, "rank", &rank, &error) || !QueryInt(request, "afterSeq", &after, &error) ||
      !QueryInt(request, "limit", &limit, &error)) {
    return error;
  }
  if (!request.Query("rank").empty()) req.set_rank(static_cast<int32_t>(std::clamp<int64_t>(rank, -1, INT32_MAX)));
  req.set_after_seq(after);
  req.set_limit(static_cast<int32_t>(std::clamp<int64_t>(limit, -1, INT32_MAX)));
  return JsonListReply(c_->GetJobLogs(req), "lines");
}

http::Reply RestApi::ListJobs(const http::Request& request) const {
  int page_size = 0;
  const std::string size = request.Query("pageSize");
  if (!size.empty() && !absl::SimpleAtoi(size, &page_size)) {
    return ErrorReply(absl::InvalidArgumentError(absl::StrCat("pageSize: expected an integer, got \"", size, "\"")));
  }
  return JsonListReply(c_->ListJobs(page_size, request.Query("pageToken")), "jobs");
}

http::Reply RestApi::Create(const http::Request& request) const {
  auto spec = spec::ParseJobSpec(request.body, "request body");
  if (!spec.ok()) return ErrorReply(spec.status());
  return JsonReply(c_->CreateJob(*std::move(spec)));
}

absl::StatusOr<std::unique_ptr<RestGateway>> RestGateway::Start(Coordinator* coordinator, RestOptions options) {
  std::unique_ptr<RestGateway> g(new RestGateway(RestApi(coordinator, options.auth, options.max_artifact_bytes)));
  http::ServerOptions server;
  server.listen = options.listen;
  server.name = "REST";
  server.tls_cert_file = options.tls_cert_file;
  server.tls_key_file = options.tls_key_file;
  server.max_body_bytes = options.max_body_bytes;
  server.body_auth = options.auth;  // every route that takes a body needs the job token
  server.threads = 8;
  server.error_reply = [](int status, std::string message) {
    return http::ErrorReply(status, absl::Status(http::CodeOfHttpStatus(status), message));
  };
  const RestApi* api = &g->api_;
  auto started = http::Server::Start(std::move(server), [api](const http::Request& r) { return api->Handle(r); });
  if (!started.ok()) return started.status();
  g->server_ = *std::move(started);
  return g;
}

}  // namespace gradsync::coordinator

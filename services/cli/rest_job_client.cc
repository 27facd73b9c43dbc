#include "rest_job_client.h"

#include "rest_answer.h"

#include "gradsync/core/json_depth.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gradsync/http/client.h"
#include "gradsync/spec/job_spec.h"

namespace gradsync::cli {
namespace {

// How often a watch asks for the job: REST has no stream to wait on.
constexpr absl::Duration kPollInterval = absl::Seconds(1);
// Listing with digests reads every file listed on the server; a file takes as long as its size
// needs (the server bounds what it sends over REST).
constexpr absl::Duration kHashingListTimeout = absl::Minutes(10);
constexpr absl::Duration kTransferTimeout = absl::Hours(1);
// The header that carries an artifact's SHA-256 (services/coordinator/rest_gateway.h).
constexpr char kChecksumHeader[] = "X-Checksum-Sha256";
// How long a watch keeps polling a coordinator that does not answer (e.g. while it restarts).
constexpr absl::Duration kWatchOutage = absl::Seconds(30);

std::string JobPath(const std::string& name) {
  const std::string id = absl::StartsWith(name, "jobs/") ? name.substr(5) : name;
  return absl::StrCat("/v1/jobs/", http::EscapeUrlComponent(id));
}

// "/v1/jobs/{id}/artifacts/" and `path` with each component escaped on its own.
std::string ArtifactPath(const std::string& name, const std::string& path) {
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(path, '/')) parts.push_back(http::EscapeUrlComponent(std::string(part)));
  return absl::StrCat(JobPath(name), "/artifacts/", absl::StrJoin(parts, "/"));
}

// Failures worth polling through: the coordinator restarting or briefly overloaded.
bool Transient(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded ||
         code == absl::StatusCode::kInternal || code == absl::StatusCode::kUnknown;
}

}  // namespace

RestJobClient::RestJobClient(std::string address, std::string base_url, std::string token, RestTls tls)
    : address_(std::move(address)), base_url_(std::move(base_url)), token_(std::move(token)), tls_(std::move(tls)) {}

http::HttpRequest RestJobClient::Request(const std::string& method, const std::string& path) const {
  http::HttpRequest request;
  request.method = method;
  request.url = base_url_ + path;
  request.bearer_token = token_;
  request.tls_ca_file = tls_.ca_file;
  request.tls_server_name = tls_.server_name;
  return request;
}

absl::Status RestJobClient::Send(const std::string& method, const std::string& path, const std::string& body,
                                 google::protobuf::Message* out, absl::Duration timeout) {
  http::HttpRequest request = Request(method, path);
  request.body = body;
  request.timeout = timeout;
  auto response = http::SendHttp(request, absl::StrCat("coordinator at ", address_));
  if (!response.ok()) return AdviseTlsServerName(response.status());
  return ParseRestAnswer(response->status, response->body, request.url, out);
}

absl::StatusOr<v1::Job> RestJobClient::Create(const v1::JobSpec& spec) {
  v1::Job job;
  if (absl::Status s = Send("POST", "/v1/jobs", spec::ToJson(spec, false), &job); !s.ok()) return s;
  return job;
}

absl::StatusOr<v1::Job> RestJobClient::Get(const std::string& name) {
  v1::Job job;
  if (absl::Status s = Send("GET", JobPath(name), "", &job); !s.ok()) return s;
  return job;
}

absl::StatusOr<v1::ListJobsResponse> RestJobClient::List(int page_size, const std::string& page_token) {
  v1::ListJobsResponse page;
  std::string path = absl::StrCat("/v1/jobs?pageSize=", page_size);
  if (!page_token.empty()) absl::StrAppend(&path, "&pageToken=", http::EscapeUrlComponent(page_token));
  if (absl::Status s = Send("GET", path, "", &page); !s.ok()) return s;
  return page;
}

absl::StatusOr<v1::Job> RestJobClient::Cancel(const std::string& name) {
  v1::Job job;
  if (absl::Status s = Send("POST", JobPath(name) + ":cancel", "", &job); !s.ok()) return s;
  return job;
}

absl::StatusOr<v1::Job> RestJobClient::Checkpoint(const std::string& name) {
  v1::Job job;
  if (absl::Status s = Send("POST", JobPath(name) + "/checkpoints", "", &job); !s.ok()) return s;
  return job;
}

absl::StatusOr<v1::ListWorkersResponse> RestJobClient::ListWorkers() {
  v1::ListWorkersResponse workers;
  if (absl::Status s = Send("GET", "/v1/workers", "", &workers); !s.ok()) return s;
  return workers;
}

absl::StatusOr<v1::GetJobLogsResponse> RestJobClient::GetLogs(const v1::GetJobLogsRequest& request) {
  std::string path = absl::StrCat(JobPath(request.name()), "/logs?afterSeq=", request.after_seq());
  if (request.has_rank()) absl::StrAppend(&path, "&rank=", request.rank());
  if (request.limit() > 0) absl::StrAppend(&path, "&limit=", request.limit());
  v1::GetJobLogsResponse logs;
  if (absl::Status s = Send("GET", path, "", &logs); !s.ok()) return s;
  return logs;
}

absl::StatusOr<v1::Job> RestJobClient::Watch(const std::string& name,
                                             const std::function<void(const v1::Job&)>& on_update,
                                             const std::atomic<bool>* stop) {
  auto stopped = [stop] { return stop != nullptr && stop->load(); };
  v1::Job last;
  bool seen = false;
  absl::Time failing_since = absl::InfiniteFuture();
  for (;;) {
    if (stopped()) return absl::CancelledError("interrupted");
    absl::StatusOr<v1::Job> job = Get(name);
    if (job.ok()) {
      failing_since = absl::InfiniteFuture();
      if (!seen || !google::protobuf::util::MessageDifferencer::Equals(*job, last)) {
        last = *std::move(job);
        seen = true;
        on_update(last);
      }
      if (IsTerminal(last.state())) return last;
    } else {
      const absl::Time now = absl::Now();
      if (failing_since == absl::InfiniteFuture()) failing_since = now;
      if (!Transient(job.status().code()) || now - failing_since > kWatchOutage) return job.status();
    }
    // Sleeps in slices so that Ctrl-C is answered promptly.
    const absl::Time next = absl::Now() + kPollInterval;
    while (!stopped() && absl::Now() < next) absl::SleepFor(absl::Milliseconds(50));
  }
}

absl::StatusOr<v1::ListArtifactsResponse> RestJobClient::ListArtifacts(const std::string& name,
                                                                       const std::string& prefix, bool sha256) {
  std::string path = absl::StrCat(JobPath(name), "/artifacts");
  const char* sep = "?";
  if (!prefix.empty()) {
    absl::StrAppend(&path, sep, "prefix=", http::EscapeUrlComponent(prefix));
    sep = "&";
  }
  if (sha256) absl::StrAppend(&path, sep, "sha256=true");
  v1::ListArtifactsResponse listed;
  if (absl::Status s = Send("GET", path, "", &listed, sha256 ? kHashingListTimeout : absl::Seconds(15)); !s.ok()) {
    return s;
  }
  return listed;
}

absl::StatusOr<v1::ArtifactTrailer> RestJobClient::GetArtifact(
    const std::string& name, const std::string& path, const std::function<void(const v1::Artifact&)>& on_header,
    const std::function<absl::Status(absl::string_view)>& on_data) {
  if (path.empty()) {
    return absl::InvalidArgumentError("path: required: a file's path relative to the job's directory");
  }
  http::HttpRequest request = Request("GET", ArtifactPath(name, path));
  request.timeout = kTransferTimeout;
  bool started = false;
  // The header: the path asked for and the size the answer announces.
  auto start = [&](const http::HttpResponse& head) {
    started = true;
    v1::Artifact header;
    header.set_path(path);
    int64_t size = -1;
    if (absl::SimpleAtoi(head.Header("Content-Length"), &size)) header.set_size_bytes(size);
    on_header(header);
  };
  request.on_body = [&](const http::HttpResponse& head, absl::string_view piece) {
    if (!started) start(head);
    return on_data(piece);
  };
  auto response = http::SendHttp(request, absl::StrCat("coordinator at ", address_));
  if (!response.ok()) return AdviseTlsServerName(response.status());
  if (response->status < 200 || response->status >= 300) {
    return StatusFromHttpError(response->status, response->body, request.url);
  }
  if (!started) start(*response);
  v1::ArtifactTrailer trailer;
  int64_t size = 0;
  const std::string length = response->Header("Content-Length");
  trailer.set_sha256(response->Header(kChecksumHeader));
  if (trailer.sha256().empty() || !absl::SimpleAtoi(length, &size)) {
    return absl::DataLossError(absl::StrCat(request.url, ": the answer has no ",
                                            trailer.sha256().empty() ? kChecksumHeader : "Content-Length", " header"));
  }
  trailer.set_size_bytes(size);
  return trailer;
}

}  // namespace gradsync::cli

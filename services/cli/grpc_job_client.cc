#include "grpc_job_client.h"

#include <chrono>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gradsync/core/terminal_text.h"
#include "gradsync/rpc/status.h"

namespace gradsync::cli {
namespace {

// Listing with digests reads every file listed on the server.
constexpr absl::Duration kHashingListTimeout = absl::Minutes(10);

// Adds the address, and what to do about a certificate naming another host, to transport errors,
// which otherwise say little. The server's words are made fit for a terminal here, where they enter.
absl::Status Annotate(const grpc::Status& s, const std::string& address) {
  const absl::Status from_server = rpc::FromGrpc(s);
  const absl::Status st(from_server.code(), TerminalSafe(std::string(from_server.message())));
  if (st.code() == absl::StatusCode::kUnavailable || st.code() == absl::StatusCode::kDeadlineExceeded) {
    return AdviseTlsServerName(absl::Status(st.code(), absl::StrCat("coordinator at ", address, ": ", st.message())));
  }
  return st;
}

}  // namespace

GrpcJobClient::GrpcJobClient(const std::string& address, const rpc::ChannelOptions& channel) : address_(address) {
  const std::shared_ptr<grpc::Channel> ch = rpc::MakeChannel(address, channel);
  stub_ = v1::JobService::NewStub(ch);
  log_stub_ = v1::JobLogService::NewStub(ch);
}

template <typename Request, typename Response>
absl::StatusOr<Response> GrpcJobClient::Call(UnaryMethod<Request, Response> method, const Request& request,
                                             absl::Duration timeout) {
  Response response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  grpc::Status s = (stub_.get()->*method)(&ctx, request, &response);
  if (!s.ok()) return Annotate(s, address_);
  return response;
}

absl::StatusOr<v1::Job> GrpcJobClient::Create(const v1::JobSpec& spec) {
  v1::CreateJobRequest req;
  *req.mutable_spec() = spec;
  return Call(&v1::JobService::Stub::CreateJob, req);
}

absl::StatusOr<v1::Job> GrpcJobClient::Get(const std::string& name) {
  v1::GetJobRequest req;
  req.set_name(name);
  return Call(&v1::JobService::Stub::GetJob, req);
}

absl::StatusOr<v1::ListJobsResponse> GrpcJobClient::List(int page_size, const std::string& page_token) {
  v1::ListJobsRequest req;
  req.set_page_size(page_size);
  req.set_page_token(page_token);
  return Call(&v1::JobService::Stub::ListJobs, req);
}

absl::StatusOr<v1::Job> GrpcJobClient::Cancel(const std::string& name) {
  v1::CancelJobRequest req;
  req.set_name(name);
  return Call(&v1::JobService::Stub::CancelJob, req);
}

absl::StatusOr<v1::Job> GrpcJobClient::Checkpoint(const std::string& name) {
  v1::CheckpointJobRequest req;
  req.set_name(name);
  return Call(&v1::JobService::Stub::CheckpointJob, req);
}

absl::StatusOr<v1::ListWorkersResponse> GrpcJobClient::ListWorkers() {
  return Call(&v1::JobService::Stub::ListWorkers, v1::ListWorkersRequest());
}

absl::StatusOr<v1::GetJobLogsResponse> GrpcJobClient::GetLogs(const v1::GetJobLogsRequest& request) {
  v1::GetJobLogsResponse response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(15));
  if (grpc::Status s = log_stub_->GetJobLogs(&ctx, request, &response); !s.ok()) return Annotate(s, address_);
  return response;
}

absl::StatusOr<v1::Job> GrpcJobClient::Watch(const std::string& name,
                                             const std::function<void(const v1::Job&)>& on_update,
                                             const std::atomic<bool>* stop) {
  v1::Job last;
  for (int failures = 0;;) {
    // No deadline: a watch lasts as long as the job.
    grpc::ClientContext ctx;
    std::atomic<bool> done{false};
    // Cancels the stream when the caller asks to stop (e.g. Ctrl-C).
    std::thread canceller([&] {
      while (!done && !(stop != nullptr && stop->load())) absl::SleepFor(absl::Milliseconds(50));
      if (!done) ctx.TryCancel();
    });
    v1::WatchJobRequest req;
    req.set_name(name);
    auto reader = stub_->WatchJob(&ctx, req);
    v1::Job job;
    while (reader->Read(&job)) {
      failures = 0;
      last = job;
      on_update(job);
    }
    grpc::Status s = reader->Finish();
    done = true;
    canceller.join();
    if (stop != nullptr && stop->load()) return absl::CancelledError("interrupted");
    if (IsTerminal(last.state())) return last;
    if (s.ok()) continue;
    if (s.error_code() == grpc::StatusCode::NOT_FOUND || s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
        s.error_code() == grpc::StatusCode::UNAUTHENTICATED || s.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
        ++failures > 30) {
      return Annotate(s, address_);
    }
    absl::SleepFor(absl::Milliseconds(500));
  }
}

absl::StatusOr<v1::ListArtifactsResponse> GrpcJobClient::ListArtifacts(const std::string& name,
                                                                       const std::string& prefix, bool sha256) {
  v1::ListArtifactsRequest req;
  req.set_name(name);
  req.set_prefix(prefix);
  req.set_sha256(sha256);
  return sha256 ? Call(&v1::JobService::Stub::ListArtifacts, req, kHashingListTimeout)
                : Call(&v1::JobService::Stub::ListArtifacts, req);
}

absl::StatusOr<v1::ArtifactTrailer> GrpcJobClient::GetArtifact(
    const std::string& name, const std::string& path, const std::function<void(const v1::Artifact&)>& on_header,
    const std::function<absl::Status(absl::string_view)>& on_data) {
  // No deadline: a file takes as long as its size needs.
  grpc::ClientContext ctx;
  v1::GetArtifactRequest req;
  req.set_name(name);
  req.set_path(path);
  auto reader = stub_->GetArtifact(&ctx, req);
  v1::GetArtifactResponse msg;
  bool header = false;
  std::optional<v1::ArtifactTrailer> trailer;
  absl::Status failed;
  while (failed.ok() && reader->Read(&msg)) {
    if (trailer.has_value() || header == msg.has_header()) {
      failed = absl::DataLossError(
          absl::StrCat("coordinator at ", address_, ": the stream of \"", path, "\" is out of order"));
    } else if (msg.has_header()) {
      header = true;
      on_header(msg.header());
    } else if (msg.has_trailer()) {
      trailer = msg.trailer();
    } else {
      failed = on_data(msg.data());
    }
  }
  if (!failed.ok()) {
    ctx.TryCancel();
    (void)reader->Finish();
    return failed;
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return Annotate(s, address_);
  if (!trailer.has_value()) {
    return absl::DataLossError(absl::StrCat("coordinator at ", address_, ": the stream of \"", path,
                                            "\" ended without its size and checksum"));
  }
  return *trailer;
}

}  // namespace gradsync::cli

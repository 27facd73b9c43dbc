// JobClient over gRPC: the coordinator's JobService, with a streaming watch that reconnects.
#pragma once

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "gradsync/rpc/server.h"
#include "gradsync/v1/job.grpc.pb.h"
#include "gradsync/v1/logs.grpc.pb.h"
#include "job_client.h"

namespace gradsync::cli {

class GrpcJobClient : public JobClient {
 public:
  // `address` is "host:port"; `channel` carries the bearer token and, for TLS, the CA.
  explicit GrpcJobClient(const std::string& address, const rpc::ChannelOptions& channel = {});

  absl::StatusOr<v1::Job> Create(const v1::JobSpec& spec) override;
  absl::StatusOr<v1::Job> Get(const std::string& name) override;
  absl::StatusOr<v1::ListJobsResponse> List(int page_size, const std::string& page_token) override;
  absl::StatusOr<v1::Job> Cancel(const std::string& name) override;
  absl::StatusOr<v1::Job> Checkpoint(const std::string& name) override;
  absl::StatusOr<v1::ListWorkersResponse> ListWorkers() override;
  absl::StatusOr<v1::GetJobLogsResponse> GetLogs(const v1::GetJobLogsRequest& request) override;
  absl::StatusOr<v1::Job> Watch(const std::string& name, const std::function<void(const v1::Job&)>& on_update,
                                const std::atomic<bool>* stop) override;
  absl::StatusOr<v1::ListArtifactsResponse> ListArtifacts(const std::string& name, const std::string& prefix,
                                                          bool sha256) override;
  // Reads the GetArtifact stream: header, data, trailer (DATA_LOSS when the stream breaks that order).
  absl::StatusOr<v1::ArtifactTrailer> GetArtifact(
      const std::string& name, const std::string& path, const std::function<void(const v1::Artifact&)>& on_header,
      const std::function<absl::Status(absl::string_view)>& on_data) override;

  const std::string& address() const override { return address_; }

 private:
  template <typename Request, typename Response>
  using UnaryMethod = grpc::Status (v1::JobService::Stub::*)(grpc::ClientContext*, const Request&, Response*);
  // One blocking call with the client's deadline; transport errors name the address.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(UnaryMethod<Request, Response> method, const Request& request,
                                absl::Duration timeout = absl::Seconds(15));

  std::string address_;
  std::unique_ptr<v1::JobService::Stub> stub_;
  std::unique_ptr<v1::JobLogService::Stub> log_stub_;
};

}  // namespace gradsync::cli

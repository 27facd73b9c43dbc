// The CLI's client of the coordinator's JobService.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gradsync/v1/job.grpc.pb.h"

namespace gradsync::cli {

class JobClient {
 public:
  // `token`, when not empty, is sent as "authorization: Bearer <token>" with every call.
  explicit JobClient(const std::string& address, std::string token = "");

  absl::StatusOr<v1::Job> Create(const v1::JobSpec& spec);
  absl::StatusOr<v1::Job> Get(const std::string& name);
  absl::StatusOr<v1::ListJobsResponse> List(int page_size, const std::string& page_token);
  absl::StatusOr<v1::Job> Cancel(const std::string& name);

  // Calls `on_update` with every snapshot until the job ends (returns it) or `stop` becomes true
  // (CANCELLED). Reconnects if the stream drops while the job runs.
  absl::StatusOr<v1::Job> Watch(const std::string& name,
                                const std::function<void(const v1::Job&)>& on_update,
                                const std::atomic<bool>* stop);

  const std::string& address() const { return address_; }

 private:
  template <typename Request, typename Response>
  using UnaryMethod = grpc::Status (v1::JobService::Stub::*)(grpc::ClientContext*, const Request&,
                                                             Response*);
  // One blocking call with the client's deadline; transport errors name the address.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(UnaryMethod<Request, Response> method, const Request& request);

  void Prepare(grpc::ClientContext* ctx, bool deadline) const;

  std::string address_;
  std::string token_;
  std::unique_ptr<v1::JobService::Stub> stub_;
};

bool IsTerminal(v1::JobState state);

}  // namespace gradsync::cli

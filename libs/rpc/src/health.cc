#include "gradsync/rpc/health.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "gradsync/rpc/server.h"
#include "gradsync/rpc/status.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace gradsync::rpc {

absl::Status CheckHealth(const std::string& address, const std::string& service, absl::Duration timeout,
                         const ChannelOptions& channel) {
  auto stub = grpc::health::v1::Health::NewStub(MakeChannel(address, channel));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  ctx.set_wait_for_ready(true);
  grpc::Status s = stub->Check(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s);
  if (resp.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError(
        absl::StrCat(address, " is ", grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status())));
  }
  return absl::OkStatus();
}

}  // namespace gradsync::rpc

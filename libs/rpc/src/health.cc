#include "gradsync/rpc/health.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "gradsync/rpc/server.h"
#include "gradsync/rpc/status.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace gradsync::rpc {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

grpc::Status Check(Health::Stub& stub, const HealthCheckRequest& req, absl::Duration timeout, bool wait_for_ready,
                   HealthCheckResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  ctx.set_wait_for_ready(wait_for_ready);
  return stub.Check(&ctx, req, resp);
}

}  // namespace

absl::Status CheckHealth(const std::string& address, const std::string& service, absl::Duration timeout,
                         const ChannelOptions& channel) {
  auto stub = Health::NewStub(MakeChannel(address, channel));
  HealthCheckRequest req;
  req.set_service(service);
  HealthCheckResponse resp;
  grpc::Status s = Check(*stub, req, timeout, /*wait_for_ready=*/true, &resp);
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    // Waiting hides why the channel never got ready (a refused connection, a certificate that does
    // not name the host); one call that fails fast on the same channel says it.
    constexpr absl::Duration kWhyTimeout = absl::Seconds(1);
    grpc::Status why = Check(*stub, req, kWhyTimeout, /*wait_for_ready=*/false, &resp);
    if (why.error_code() == grpc::StatusCode::UNAVAILABLE) {
      return absl::DeadlineExceededError(absl::StrCat(s.error_message(), " (", why.error_message(), ")"));
    }
    if (why.ok()) s = why;
  }
  if (!s.ok()) return FromGrpc(s);
  if (resp.status() != HealthCheckResponse::SERVING) {
    return absl::UnavailableError(
        absl::StrCat(address, " is ", HealthCheckResponse::ServingStatus_Name(resp.status())));
  }
  return absl::OkStatus();
}

}  // namespace gradsync::rpc

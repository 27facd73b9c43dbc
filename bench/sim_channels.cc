#include "sim_channels.h"

#include <chrono>

#include "gradsync/rpc/server.h"

namespace gradsync::bench {

CoordinatorChannels::CoordinatorChannels(const std::string& address, const std::string& cluster_token, int count)
    : authorization_(cluster_token.empty() ? "" : "Bearer " + cluster_token) {
  for (int i = 0; i < count; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
    // Channels with equal arguments share one connection through gRPC's global subchannel pool;
    // a pool per channel gives each its own, as separate worker processes have.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(64 << 20);
    stubs_.push_back(
        v1::CoordinatorService::NewStub(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args)));
  }
}

void CoordinatorChannels::Prepare(grpc::ClientContext* ctx, const std::string& session, absl::Duration timeout) const {
  if (!authorization_.empty()) ctx->AddMetadata("authorization", authorization_);
  if (!session.empty()) ctx->AddMetadata(rpc::kWorkerSessionMetadata, session);
  if (timeout > absl::ZeroDuration()) {
    ctx->set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  }
}

}  // namespace gradsync::bench

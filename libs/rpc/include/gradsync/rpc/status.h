// Converts between absl::Status (used by all gradsync logic) and grpc::Status (the wire),
// once, at the RPC boundary.
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace gradsync::rpc {

grpc::Status ToGrpc(const absl::Status& status);
absl::Status FromGrpc(const grpc::Status& status);

}  // namespace gradsync::rpc

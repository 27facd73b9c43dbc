// A client of grpc.health.v1, for probes and tests.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gradsync/rpc/server.h"

namespace gradsync::rpc {

// OK when the server at `address` answers SERVING for `service` ("" is the whole server).
// UNAVAILABLE naming the status otherwise, or the transport error; DEADLINE_EXCEEDED after
// `timeout`, with the channel's last transport error when it has one (a refused connection, a
// certificate that does not name the host).
// `channel` carries TLS roots for a TLS server. Waits through a server still starting.
absl::Status CheckHealth(const std::string& address, const std::string& service, absl::Duration timeout,
                         const ChannelOptions& channel = {});

}  // namespace gradsync::rpc

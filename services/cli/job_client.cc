#include "job_client.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gradsync/rpc/server.h"
#include "grpc_job_client.h"
#include "rest_job_client.h"

namespace gradsync::cli {

bool IsTerminal(v1::JobState s) { return s == v1::SUCCEEDED || s == v1::FAILED || s == v1::CANCELLED; }

absl::StatusOr<std::unique_ptr<JobClient>> MakeJobClient(const JobClientOptions& options) {
  const std::string& address = options.address;
  // Read here, for both transports, so that a missing or bad CA file is reported before any call.
  auto channel = rpc::ChannelOptions::FromFiles(options.tls_ca_file, "");
  if (!channel.ok()) return channel.status();
  if (absl::StartsWith(address, "http://") || absl::StartsWith(address, "https://")) {
    const bool https = absl::StartsWith(address, "https://");
    if (!https && !options.tls_ca_file.empty()) {
      // Refused rather than ignored: the user expects TLS, and the token would go in the clear.
      return absl::InvalidArgumentError(absl::StrCat("--tls-ca is for TLS servers; use https:// instead of ", address));
    }
    std::string base(address);
    while (absl::EndsWith(base, "/")) base.pop_back();
    return std::unique_ptr<JobClient>(
        std::make_unique<RestJobClient>(address, base, options.token, options.tls_ca_file));
  }
  if (address.empty() || absl::StrContains(address, "://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--address: expected HOST:PORT (gRPC), http://HOST:PORT or https://HOST:PORT (REST), got \"", address, "\""));
  }
  channel->bearer_token = options.token;
  return std::unique_ptr<JobClient>(std::make_unique<GrpcJobClient>(address, *channel));
}

}  // namespace gradsync::cli

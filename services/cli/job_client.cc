#include "job_client.h"

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gradsync/rpc/server.h"
#include "grpc_job_client.h"
#include "rest_job_client.h"

namespace gradsync::cli {

absl::StatusOr<v1::ListJobsResponse> ListAllJobs(JobClient& client, int page_size) {
  constexpr int kMaxPages = 100000;
  v1::ListJobsResponse all;
  std::set<std::string> seen;
  std::string token;
  for (int pages = 0;; ++pages) {
    if (pages == kMaxPages) {
      return absl::DataLossError(absl::StrCat("the coordinator's job list did not end after ", kMaxPages, " pages"));
    }
    auto page = client.List(page_size, token);
    if (!page.ok()) return page.status();
    for (auto& j : *page->mutable_jobs()) *all.add_jobs() = std::move(j);
    token = page->next_page_token();
    if (token.empty()) return all;
    if (!seen.insert(token).second) {
      return absl::DataLossError("the coordinator answered a page token it had given before: its job list loops");
    }
  }
}

bool IsTerminal(v1::JobState s) { return s == v1::SUCCEEDED || s == v1::FAILED || s == v1::CANCELLED; }

absl::Status AdviseTlsServerName(absl::Status status) {
  // gRPC: "Peer name 127.0.0.1 is not in peer certificate"; libcurl: "... does not match target
  // host name '127.0.0.1'" or "no alternative certificate subject name matches target host name".
  const absl::string_view m = status.message();
  if (!absl::StrContains(m, "is not in peer certificate") && !absl::StrContains(m, "target host name")) return status;
  return absl::Status(status.code(), absl::StrCat(m,
                                                  "; the server's certificate does not name the host dialled: pass "
                                                  "--tls-server-name with a name it carries (such as its Service)"));
}

namespace {

// The TLS options against the transport the address names. Both are refused rather than ignored
// without TLS: the user expects a verified server, and the token would go in the clear.
absl::Status CheckTlsOptions(const JobClientOptions& options, bool rest, bool https) {
  if (absl::Status s = rpc::CheckTlsServerName(options.tls_server_name); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--tls-server-name: ", s.message()));
  }
  const bool named = !options.tls_server_name.empty();
  if (rest && !https && (named || !options.tls_ca_file.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(named ? "--tls-server-name" : "--tls-ca",
                                                   " is for TLS servers; use https:// instead of ", options.address));
  }
  if (!rest && named && options.tls_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-server-name is for TLS servers: give --tls-ca too (without it the gRPC channel is plaintext)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<JobClient>> MakeJobClient(const JobClientOptions& options) {
  const std::string& address = options.address;
  const bool https = absl::StartsWith(address, "https://");
  const bool rest = https || absl::StartsWith(address, "http://");
  if (!rest && (address.empty() || absl::StrContains(address, "://"))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--address: expected HOST:PORT (gRPC), http://HOST:PORT or https://HOST:PORT (REST), got \"", address, "\""));
  }
  if (absl::Status s = CheckTlsOptions(options, rest, https); !s.ok()) return s;
  // Read here, for both transports, so that a missing or bad CA file is reported before any call.
  auto channel = rpc::ChannelOptions::FromFiles(options.tls_ca_file, "");
  if (!channel.ok()) return channel.status();
  if (rest) {
    std::string base(address);
    while (absl::EndsWith(base, "/")) base.pop_back();
    return std::unique_ptr<JobClient>(std::make_unique<RestJobClient>(
        address, base, options.token, RestTls{options.tls_ca_file, options.tls_server_name}));
  }
  channel->bearer_token = options.token;
  channel->tls_server_name = options.tls_server_name;
  return std::unique_ptr<JobClient>(std::make_unique<GrpcJobClient>(address, *channel));
}

}  // namespace gradsync::cli

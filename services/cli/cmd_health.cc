// gradsync healthcheck ADDRESS: exits 0 when the server answers SERVING (for probes).
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "args.h"
#include "commands.h"
#include "gradsync/rpc/health.h"
#include "job_client.h"

namespace gradsync::cli {
int HealthCommand(const std::vector<std::string>& argv) {
  // No environment fallback for --tls-ca: a worker's GRADSYNC_TLS_CA_FILE is about its
  // coordinator, and a probe of the worker's own plaintext health port must not pick it up.
  auto args = ParseArgs("healthcheck", argv, {{"service"}, {"timeout"}, {"tls-ca"}});
  if (!args.ok() || args->positional.size() != 1) {
    std::fprintf(stderr,
                 "usage: gradsync healthcheck HOST:PORT [--service NAME] [--timeout SECONDS] [--tls-ca FILE]\n");
    return 2;
  }
  auto timeout = args->GetInt("timeout", 5, 1, 3600);
  if (!timeout.ok()) {
    std::fprintf(stderr, "%s\n", std::string(timeout.status().message()).c_str());
    return 2;
  }
  auto channel = rpc::ChannelOptions::FromFiles(args->Get("tls-ca"), "");
  if (!channel.ok()) {
    std::fprintf(stderr, "%s\n", std::string(channel.status().message()).c_str());
    return 2;
  }
  const std::string& address = args->positional[0];
  absl::Status s = rpc::CheckHealth(address, args->Get("service"), absl::Seconds(*timeout), *channel);
  if (!s.ok()) {
    // A TLS server never answers a plaintext probe; the deadline is all the probe sees.
    const char* hint = s.code() == absl::StatusCode::kDeadlineExceeded && channel->tls_ca_pem.empty()
                           ? " (for a TLS server, pass --tls-ca)"
                           : "";
    std::fprintf(stderr, "%s: %s%s\n", address.c_str(), std::string(s.message()).c_str(), hint);
    return 1;
  }
  std::printf("%s: SERVING\n", address.c_str());
  return 0;
}

}  // namespace gradsync::cli

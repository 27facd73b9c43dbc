// gradsync healthcheck ADDRESS: exits 0 when the server answers SERVING (for probes).
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "gradsync/core/args.h"
#include "gradsync/rpc/health.h"
#include "job_client.h"

namespace gradsync::cli {
namespace {

// The usage lines from the command table, for errors.
std::string Usage() { return GroupUsage("healthcheck"); }

// The channel the options describe. --tls-server-name without --tls-ca is refused: the probe would
// be plaintext while its author expects a verified TLS server.
absl::StatusOr<rpc::ChannelOptions> ProbeChannel(const Args& args) {
  const std::string name = args.Get("tls-server-name");
  if (absl::Status s = rpc::CheckTlsServerName(name); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--tls-server-name: ", s.message()));
  }
  if (!name.empty() && args.Get("tls-ca").empty()) {
    return absl::InvalidArgumentError("--tls-server-name is for TLS servers: give --tls-ca too");
  }
  auto channel = rpc::ChannelOptions::FromFiles(args.Get("tls-ca"), "");
  if (channel.ok()) channel->tls_server_name = name;
  return channel;
}

// What to try when the probe ran out of time: a TLS server never answers a plaintext probe.
std::string HealthHint(const absl::Status& status, const rpc::ChannelOptions& channel) {
  if (status.code() != absl::StatusCode::kDeadlineExceeded) return "";
  if (channel.tls_ca_pem.empty()) return " (for a TLS server, pass --tls-ca)";
  return "";
}

}  // namespace

int HealthCommand(const std::vector<std::string>& argv) {
  // No environment fallback for --tls-ca or --tls-server-name: a worker's GRADSYNC_TLS_CA_FILE and
  // GRADSYNC_TLS_SERVER_NAME are about its coordinator, and a probe of the worker's own plaintext
  // health port must not pick them up.
  auto args = ParseCommandArgs("healthcheck", argv);
  if (!args.ok() || args->positional.size() != 1) {
    if (!args.ok()) std::fprintf(stderr, "%s\n", std::string(args.status().message()).c_str());
    std::fputs(Usage().c_str(), stderr);
    return 2;
  }
  auto timeout = args->GetInt("timeout", 5, 1, 3600);
  if (!timeout.ok()) {
    std::fprintf(stderr, "%s\n", std::string(timeout.status().message()).c_str());
    return 2;
  }
  auto channel = ProbeChannel(*args);
  if (!channel.ok()) {
    std::fprintf(stderr, "%s\n", std::string(channel.status().message()).c_str());
    return 2;
  }
  const std::string& address = args->positional[0];
  absl::Status s = rpc::CheckHealth(address, args->Get("service"), absl::Seconds(*timeout), *channel);
  if (!s.ok()) {
    s = AdviseTlsServerName(s);
    std::fprintf(stderr, "%s: %s%s\n", address.c_str(), std::string(s.message()).c_str(),
                 HealthHint(s, *channel).c_str());
    return 1;
  }
  std::printf("%s: SERVING\n", address.c_str());
  return 0;
}

// Its rows of the command table (command_table.h).
std::vector<Command> HealthRows() {
  std::vector<Command> t;
  t.push_back(
      {.name = "healthcheck",
       .synopsis = "HOST:PORT [--service NAME] [--timeout SECONDS] [--tls-ca FILE] [--tls-server-name NAME]",
       .summary = "exit 0 when the server answers grpc.health.v1 SERVING (for probes)",
       .example = "gradsync healthcheck localhost:7070",
       .options = {{"service", "NAME"}, {"timeout", "SECONDS"}, {"tls-ca", "FILE"}, {"tls-server-name", "NAME"}},
       .run = HealthCommand});
  return t;
}

}  // namespace gradsync::cli

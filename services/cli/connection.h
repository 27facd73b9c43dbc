// The options that name a server and how to reach it, shared by the commands that talk to a
// cluster:
//   the coordinator  --address (GRADSYNC_ADDRESS), --token-file (GRADSYNC_AUTH_TOKEN_FILE, or GRADSYNC_TOKEN_FILE) or --token
//                    (GRADSYNC_TOKEN), --tls-ca (GRADSYNC_TLS_CA_FILE), --tls-server-name
//                    (GRADSYNC_TLS_SERVER_NAME);
//   its metrics      --metrics-api (GRADSYNC_METRICS_API), --metrics-token-file
//                    (GRADSYNC_METRICS_TOKEN_FILE);
//   or, for a local cluster, --state-dir DIR: every address and token from DIR/endpoints.json.
// An option given outranks --state-dir, which outranks the environment (GRADSYNC_STATE_DIR
// among it), which outranks the current cluster: the one the last `gradsync local up` started,
// while it runs (gradsync/cli/current_cluster.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/cluster/local_cluster_file.h"
#include "gradsync/core/args.h"
#include "job_client.h"

namespace gradsync::cli {

// The client the options describe (a job named by its id or its spec name, job_names.h); the
// address defaults to localhost:7070. INVALID_ARGUMENT for
// --token with --token-file or --address with --state-dir; NOT_FOUND naming a token file or a
// state directory without a running cluster; otherwise errors as MakeJobClient's.
absl::StatusOr<std::unique_ptr<JobClient>> ConnectJobClient(const Args& args);

// The local cluster whose job API the options name (--state-dir, GRADSYNC_STATE_DIR or the current
// cluster, as ConnectJobClient picks it): one on this machine, reading files where this process
// sees them. None when they name another server. Errors as ConnectJobClient's for a state
// directory without a cluster.
absl::StatusOr<std::optional<cluster::LocalClusterFile>> TargetLocalCluster(const Args& args);

// The metrics service's JSON API and the token its readers present ("" for none).
struct MetricsApi {
  std::string address;  // host:port; "" when nothing names one
  std::string token;
  // Whether the options, a local cluster or the environment named the address, rather than the
  // fallback standing in for them.
  bool named = false;
};
// What the options name, `fallback` for the address when nothing does. NOT_FOUND naming a token
// file or a state directory without a running cluster.
absl::StatusOr<MetricsApi> MetricsApiFromArgs(const Args& args, const std::string& fallback = "");

// How a failed client call reads on stderr: "CODE: message", except INVALID_ARGUMENT, which is
// already about the user's input and reads better alone.
std::string DescribeError(const absl::Status& status);

}  // namespace gradsync::cli

// The tokens of a local cluster. `gradsync run` and `gradsync local up` make fresh random ones on
// every start, so that the cluster's ports, although on loopback, serve no other user of the
// machine: each token is a file only this user can read (0600, in a 0700 directory), and the
// cluster file (gradsync/cli/local_cluster_file.h) names them for the commands that talk to it.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync::cluster {

// Token names, as in the cluster file's "tokenFiles": the job APIs' (coordinator gRPC and REST),
// the workers' (coordinator and step reports), and the readers' of /metrics and the JSON API.
inline constexpr char kAuthToken[] = "auth";
inline constexpr char kClusterToken[] = "cluster";
inline constexpr char kMetricsToken[] = "metrics";

// Writes a new token for each name to <state_dir>/tokens/<name>.token, replacing earlier ones
// atomically, and returns the paths by name. INTERNAL naming the file or directory that cannot be
// written; a token is never part of a message.
absl::StatusOr<std::map<std::string, std::string>> WriteLocalTokens(const std::string& state_dir);

}  // namespace gradsync::cluster

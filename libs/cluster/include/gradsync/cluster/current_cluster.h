// The current cluster: the local cluster that commands reach when nothing else names one, as
// kubectl's current context or Ray's address of the last `ray start`. `gradsync local up` makes
// its cluster current and `gradsync local down` forgets it; `--address`, `--state-dir`,
// GRADSYNC_ADDRESS and GRADSYNC_STATE_DIR (and, for the metrics API, `--metrics-api` and
// GRADSYNC_METRICS_API) all outrank it.
//
// The record is one line, the state directory's absolute path, in <config dir>/current-cluster,
// where the config dir is GRADSYNC_CONFIG_DIR, else $XDG_CONFIG_HOME/gradsync, else
// ~/.config/gradsync. A record whose cluster no longer runs (no endpoints.json) is ignored.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace gradsync::cluster {

// <config dir>/current-cluster.
std::string CurrentClusterPath();

// Records `state_dir` (made absolute) as current, replacing the record atomically. INTERNAL naming
// the file when it cannot be written.
absl::Status SetCurrentCluster(const std::string& state_dir);

// Forgets the current cluster if it is `state_dir`; another one stays current.
void ForgetCurrentCluster(const std::string& state_dir);

// The current cluster's state directory while it runs; "" when none is recorded or it stopped.
std::string CurrentCluster();

}  // namespace gradsync::cluster

// Runs a benchmark's ranks as separate local processes: starts a coordinator (for rendezvous),
// then this binary once per rank with "--rank R --coordinator ADDR --cluster-token-file FILE
// [--cpus LIST]" appended, and waits.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gradsync::bench {

struct RankLaunch {
  std::string mode;               // the subcommand each rank runs, e.g. "allreduce-rank"
  std::vector<std::string> args;  // passed through to every rank
  int ranks = 2;
  // Rank r runs on its even share of this process's CPUs (gradsync/core/cpu_set.h), as the
  // workers of a local cluster do; no binding when there are fewer CPUs than ranks.
  bool bind_cpus = true;
};

// Returns when every rank exited; rank 0's standard output is copied to ours.
absl::Status LaunchRanks(const RankLaunch& launch);

}  // namespace gradsync::bench

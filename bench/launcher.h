// Runs a benchmark's ranks as separate local processes: starts a coordinator (for rendezvous),
// then this binary once per rank with "--rank R --coordinator ADDR" appended, and waits.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gradsync::bench {

struct RankLaunch {
  std::string mode;                // the subcommand each rank runs, e.g. "allreduce-rank"
  std::vector<std::string> args;   // passed through to every rank
  int ranks = 2;
};

// Returns when every rank exited; rank 0's standard output is copied to ours.
absl::Status LaunchRanks(const RankLaunch& launch);

}  // namespace gradsync::bench

// `gradsync-bench scale`: how many workers one coordinator serves, measured by simulation. A crowd
// of simulated workers (sim_fleet.h) registers, holds assignment streams and heartbeats at the
// coordinator's interval, growing step by step until heartbeat p99 reaches 100 ms or the
// coordinator loses a worker that was heartbeating; then R simulated ranks rendezvous through
// its key-value store as Gloo does (sim_rendezvous.h), for growing R.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scale_target.h"
#include "sim_channels.h"

namespace gradsync::bench {

struct ScaleOptions {
  // Worker counts, one measured step each, in increasing order.
  std::vector<int> workers = {250, 500, 1000, 2000, 4000, 8000, 16000};
  // Each step: wait `settle` after the new workers registered, then measure for `measure`, or
  // longer when settle and measure together would not outlast the coordinator's lease (an expiry
  // shows only after it).
  absl::Duration settle = absl::Seconds(3);
  absl::Duration measure = absl::Seconds(15);
  int channels = 8;
  bool watch_assignments = true;
  // Rendezvous sizes, and the most bytes a round with Gloo's values may move (larger rounds run
  // with one address a key only).
  std::vector<int> ranks = {2, 8, 32, 128, 512, 1024, 2048};
  int64_t gloo_bytes_cap = int64_t{32} << 30;
  bool heartbeats = true;
  bool rendezvous = true;
  // A coordinator already running, and its cluster token file; empty: start one.
  std::string coordinator;
  std::string cluster_token_file;
  // The smoke test: 64 workers for one lease, small rendezvous, and a failing exit status when a
  // worker was lost, a call failed or the rendezvous did not complete (speed is never asserted).
  bool quick = false;
};

// INVALID_ARGUMENT naming the option for anything malformed.
absl::StatusOr<ScaleOptions> ParseScaleOptions(const std::vector<std::string>& argv);

// Below this heartbeat p99, with no worker lost, a step meets the goal.
inline constexpr absl::Duration kGoalP99 = absl::Milliseconds(100);

// The heartbeat steps: prints a line per step and the table; returns whether every step ran
// without losing a worker or a call (the quick mode's check).
bool RunHeartbeatSteps(const ScaleTarget& target, const CoordinatorChannels& channels, const ScaleOptions& options);

// The rendezvous rounds: prints a line per round and the table; false when one failed.
bool RunRendezvousRounds(const CoordinatorChannels& channels, const ScaleOptions& options);

// The whole benchmark; the process's exit status.
int ScaleBench(const ScaleOptions& options);

}  // namespace gradsync::bench

// Fault injection for drills: make one rank stall at a chosen step, with its heartbeats going on,
// as a rank stuck in a slow data loader, a hung kernel or a paused process would. The other ranks
// then wait in the step's first gradient all-reduce, and the coordinator's hang diagnosis must
// name the stalled rank. Off unless --inject_stall is given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gradsync::worker {

struct StallFault {
  int rank = 0;
  // The optimizer step (counted from 1) at whose start the rank stalls, once per generation.
  int64_t step = 0;
  absl::Duration duration;
};

// "rank=1,step=40,seconds=8" (all three required). Empty: no fault. INVALID_ARGUMENT naming the
// part that is wrong.
absl::StatusOr<std::optional<StallFault>> ParseStallFault(const std::string& spec);

}  // namespace gradsync::worker

// Hang diagnosis for one generation. Every heartbeat of a running rank carries its last step, the
// collectives it issued and finished, and its activity in words. Collectives run in the same
// order on every rank, so when a generation stops making progress the counters tell the story: a
// rank that issued fewer collectives than the others is the one holding them up (still computing,
// or stuck before its next bucket), and the others' oldest pending collective names the bucket
// they wait in. When every rank waits in the same collective, the transport itself is stuck.
// Not thread-safe: its Generation's owner serialises access.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gradsync/v1/coordinator.pb.h"

namespace gradsync::coordinator {

class StallWatch {
 public:
  // A generation of `world_size` ranks scheduled at `start`.
  StallWatch(size_t world_size, absl::Time start) : world_size_(world_size), last_progress_(start) {}

  // Records rank `beat.rank()`'s heartbeat at `now`. A rank progresses when it finishes a
  // collective or a step; when that ends a stall, returns the StallCleared message.
  std::optional<std::string> Record(const v1::HeartbeatRequest& beat, absl::Time now);

  // Whether the generation stalled by `now`: every rank has beaten, some collective was issued,
  // and no rank progressed for `timeout` or three step times, whichever is longer. True once per
  // stall, so each stall gets one event.
  bool CheckStalled(absl::Time now, absl::Duration timeout);

  // Why the generation stalled at `now`: the Stalled message. `rank_names[r]` names rank r with
  // its worker and host.
  std::string Describe(absl::Time now, const std::vector<std::string>& rank_names) const;

 private:
  std::string Diagnose(const std::vector<std::string>& rank_names) const;

  size_t world_size_;
  // Each rank's last heartbeat.
  std::map<int, v1::HeartbeatRequest> beats_;
  // When any rank last finished a collective or a step.
  absl::Time last_progress_;
  // When rank 0 last finished a step, and how long its steps take.
  absl::Time last_step_change_;
  absl::Duration step_time_ = absl::ZeroDuration();
  bool stalled_ = false;
};

}  // namespace gradsync::coordinator

// One job's live recovery (training.recovery "live"), as the coordinator keeps it: which workers
// keep the job's training state in memory after a failed generation, and at which step; the
// failure that awaits its recovery; the choice of the next generation's source; and the account
// of what failures cost (v1::RecoveryStats, shown in the job).
//
// The protocol, from the coordinator's side:
//   1. A generation fails (a rank's error, a lease that ran out): Failed() notes when, its ranks,
//      and the furthest step any of them is known to have committed.
//   2. The survivors, aborted, report their results; each that kept its state says so
//      (ReportResultRequest.held): Held().
//   3. The scheduler forms the next generation from the survivors and idle spares as for any
//      restart. Source() names the rank of that gang whose worker keeps the furthest state; the
//      assignments then carry live_from instead of a checkpoint, and Started() closes the failure
//      with the QuorumChanged message (who left, who joined, the step retrained, the seconds the
//      new quorum took).
//   4. The first heartbeat of the new generation past the resume step ends the recovery:
//      Stepped() returns the Recovered message with the seconds from the failure.
// Held states are forgotten when a generation starts (its ranks report their own at its end), and
// when their worker is lost or goes to another job. Nothing here is stored: a restarted
// coordinator resumes from the checkpoint, as a generation it cannot adopt always did.
//
// Not thread-safe: the coordinator owns it, through its JobRuntime, under its lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gradsync/v1/coordinator.pb.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::coordinator {

class RecoveryLedger {
 public:
  // Goes on from the account the job stored.
  explicit RecoveryLedger(v1::RecoveryStats stats = {}) : stats_(std::move(stats)) {}

  const v1::RecoveryStats& stats() const { return stats_; }

  // The running generation's ranks committed `step` steps (a heartbeat, a result): the furthest
  // is what a failure loses beyond the step the next generation resumes at.
  void Reached(int64_t step);
  // The generation of workers `ranks` (worker ids by rank) failed at `now`.
  void Failed(std::vector<std::string> ranks, absl::Time now);
  // Worker `worker_id` keeps the state of generation held.generation() at held.step() in memory.
  void Held(const std::string& worker_id, const v1::HeldState& held);
  // `worker_id` keeps nothing of this job any more (lost, or assigned to another job).
  void Forget(const std::string& worker_id) { held_.erase(worker_id); }
  // The rank of `gang` (worker ids by rank) whose worker keeps the furthest state, the lowest such
  // rank, and that state's step; nullopt when none of them keeps one.
  std::optional<v1::LiveResume> Source(const std::vector<std::string>& gang) const;

  // A generation of `gang` starts at `now`, resuming at step `resumed`: from the memory of rank
  // live->source_rank when `live` is set (resumed is then live->step), else from a checkpoint or
  // the start. After a failure, counts the recovery and returns the QuorumChanged message for a
  // live one; nullopt otherwise. The held states are forgotten.
  std::optional<std::string> Started(const std::vector<std::string>& gang, const std::optional<v1::LiveResume>& live,
                                     int64_t resumed, absl::Time now);
  // A rank of the running generation has `step` steps done at `now`. The first report past the
  // step a recovery resumed at ends it: returns the Recovered message.
  std::optional<std::string> Stepped(int64_t step, absl::Time now);

 private:
  struct Failure {
    absl::Time at;
    std::vector<std::string> ranks;
  };
  struct Recovering {
    absl::Time failed_at;
    int64_t resumed = 0;
    bool live = false;
  };

  v1::RecoveryStats stats_;
  // Worker id -> the state it keeps.
  std::map<std::string, v1::HeldState> held_;
  // The furthest step the running generation's ranks committed.
  int64_t furthest_ = 0;
  // A failure the next generation has not started from yet, and a started one awaiting its step.
  std::optional<Failure> failure_;
  std::optional<Recovering> recovering_;
};

}  // namespace gradsync::coordinator

// Where the assignment streams of idle workers wait (Coordinator::NextAssignment): each on a
// CondVar of its worker's, woken when the worker is given an assignment, when it is lost, and at
// shutdown. A Condition on the coordinator's mutex would say the same more simply, but absl
// evaluates every waiting Condition at each release of the mutex: with one stream per worker,
// every heartbeat cost O(workers), and a coordinator of 1,000 workers spent its cores re-checking
// streams (bench/README.md, scale). Not thread-safe: the coordinator calls it under the mutex its
// waiters wait with.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gradsync::coordinator {

class AssignmentWaits {
 public:
  // With `mu` held: returns once `ready` holds or at `deadline`. `ready` is checked on entry and
  // at each wake-up of worker `id`'s waiters, never otherwise; `mu` is released while waiting.
  void Wait(absl::Mutex* mu, const std::string& id, absl::Time deadline, absl::FunctionRef<bool()> ready);
  // The worker `id` has an assignment to take.
  void Wake(const std::string& id);
  // The worker `id` is gone: its waiters wake, and its CondVar goes once they leave.
  void Forget(const std::string& id);
  // Shutdown: every waiter wakes.
  void WakeAll();

  // For tests: streams waiting now, and how often `ready` has been checked in all.
  int TEST_waiters() const { return waiters_; }
  int64_t TEST_checks() const { return checks_; }

 private:
  // Shared with the waiters, so that a Forget during a wait leaves theirs in place.
  std::map<std::string, std::shared_ptr<absl::CondVar>> cvs_;
  int waiters_ = 0;
  int64_t checks_ = 0;
};

}  // namespace gradsync::coordinator

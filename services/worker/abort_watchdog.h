// The backstop of an abort. A generation asked to abort stops twice over: its collective in flight
// fails (Communicator::Abort) and its loop leaves at the next step boundary. A rank that has still
// not stopped after a grace period is stuck where neither reaches (a wait outside the
// communicator, a hung library call); it can never serve another generation, and its survivors
// wait for it. So the worker says where it is stuck and exits, for its supervisor (Kubernetes,
// Compose's restart policy, the local cluster of `gradsync run`) to start it afresh: what
// PyTorch's NCCL watchdog does with a collective that outlives its abort.
//
// The loop looks at the abort only between steps, so the grace is at least kStepsOfGrace of the
// generation's slowest steps: a large model's CPU step may outlast the configured grace.
#pragma once

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gradsync::worker {

// The exit status of a worker that outlived its grace (EX_SOFTWARE).
inline constexpr int kAbortHungExitCode = 70;

class AbortWatchdog {
 public:
  static constexpr int kStepsOfGrace = 3;

  // `describe` says where the generation is (it must not block); `expire` runs once, on the
  // watchdog's thread, when the grace is spent (default: log and exit kAbortHungExitCode).
  // A zero `grace` turns the watchdog off.
  AbortWatchdog(absl::Duration grace, std::function<std::string()> describe,
                std::function<void(const std::string& why)> expire = nullptr);
  ~AbortWatchdog();
  AbortWatchdog(const AbortWatchdog&) = delete;
  AbortWatchdog& operator=(const AbortWatchdog&) = delete;

  // A generation starts: no abort pending, no step seen.
  void GenerationStarted();
  // A step starts: the gap since the last one counts towards the slowest step.
  void StepBegan();
  // This generation needs at least `grace` to stop once aborted (a script job's children get
  // script.stopGraceSeconds between SIGTERM and SIGKILL); GenerationStarted forgets it.
  void NeedAtLeast(absl::Duration grace);
  // The generation is asked to abort; the first call of a generation starts the grace. Between
  // generations (an idle worker forgotten by a restarted coordinator, a shutdown) it does nothing.
  void AbortRequested();
  // The generation has stopped, replica and all.
  void GenerationEnded();

  // The grace now in force: the configured one, or kStepsOfGrace of the slowest step, or what the
  // generation said it needs, whichever is longest.
  absl::Duration EffectiveGrace() const;

 private:
  void Watch();
  absl::Duration EffectiveGraceLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration grace_;
  const std::function<std::string()> describe_;
  const std::function<void(const std::string&)> expire_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool expired_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time aborted_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Time last_step_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Duration slowest_step_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  absl::Duration needed_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  std::thread thread_;  // started last
};

}  // namespace gradsync::worker

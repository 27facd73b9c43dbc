#include "abort_watchdog.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "gradsync/core/log.h"

namespace gradsync::worker {
namespace {

constexpr absl::Duration kPoll = absl::Milliseconds(200);

void LogAndExit(const std::string& why) {
  GS_LOG(ERROR) << why << "; exiting (status " << kAbortHungExitCode << ") for the supervisor to restart the worker";
  std::fflush(stderr);
  std::fflush(stdout);
  // Not exit(): destructors would wait on the very thread that is stuck.
  std::_Exit(kAbortHungExitCode);
}

}  // namespace

AbortWatchdog::AbortWatchdog(absl::Duration grace, std::function<std::string()> describe,
                             std::function<void(const std::string&)> expire)
    : grace_(grace), describe_(std::move(describe)), expire_(expire ? std::move(expire) : LogAndExit) {
  if (grace_ > absl::ZeroDuration()) thread_ = std::thread([this] { Watch(); });
}

AbortWatchdog::~AbortWatchdog() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void AbortWatchdog::GenerationStarted() {
  absl::MutexLock lock(&mu_);
  running_ = true;
  aborted_at_ = absl::InfiniteFuture();
  last_step_ = absl::InfinitePast();
  slowest_step_ = absl::ZeroDuration();
  needed_ = absl::ZeroDuration();
}

void AbortWatchdog::NeedAtLeast(absl::Duration grace) {
  absl::MutexLock lock(&mu_);
  needed_ = std::max(needed_, grace);
}

void AbortWatchdog::StepBegan() {
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  if (last_step_ != absl::InfinitePast()) slowest_step_ = std::max(slowest_step_, now - last_step_);
  last_step_ = now;
}

void AbortWatchdog::AbortRequested() {
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  if (running_ && aborted_at_ == absl::InfiniteFuture()) aborted_at_ = now;
}

void AbortWatchdog::GenerationEnded() {
  absl::MutexLock lock(&mu_);
  running_ = false;
  aborted_at_ = absl::InfiniteFuture();
}

absl::Duration AbortWatchdog::EffectiveGrace() const {
  absl::MutexLock lock(&mu_);
  return EffectiveGraceLocked();
}

absl::Duration AbortWatchdog::EffectiveGraceLocked() const {
  return std::max({grace_, kStepsOfGrace * slowest_step_, needed_});
}

void AbortWatchdog::Watch() {
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    mu_.AwaitWithTimeout(absl::Condition(&stop_), kPoll);
    if (stop_ || expired_ || aborted_at_ == absl::InfiniteFuture()) continue;
    const absl::Duration waited = absl::Now() - aborted_at_;
    if (waited < EffectiveGraceLocked()) continue;
    expired_ = true;
    const absl::Duration grace = EffectiveGraceLocked();
    mu_.Unlock();
    expire_(absl::StrCat("the generation has not stopped ", absl::FormatDuration(absl::Trunc(waited, kPoll)),
                         " after it was aborted (grace ", absl::FormatDuration(grace),
                         "): ", describe_ ? describe_() : std::string("nothing known of where it is")));
    mu_.Lock();
  }
}

}  // namespace gradsync::worker

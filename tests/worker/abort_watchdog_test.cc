// The abort watchdog on its own, with the exit replaced by a note of why: it fires once an aborted
// generation outlives its grace, says where the generation is, never fires for a generation that
// stopped, and lengthens the grace to a few of the generation's slowest steps.
#include "abort_watchdog.h"

#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync::worker {
namespace {

using ::testing::HasSubstr;

struct Expiry {
  absl::Notification fired;
  absl::Mutex mu;
  std::string why;
  void operator()(const std::string& w) {
    {
      absl::MutexLock lock(&mu);
      why = w;
    }
    fired.Notify();
  }
};

TEST(AbortWatchdog, FiresWhenAnAbortedGenerationOutlivesItsGraceSayingWhereItIs) {
  Expiry expiry;
  AbortWatchdog watchdog(
      absl::Milliseconds(100), [] { return "waiting in collective #7"; },
      [&expiry](const std::string& why) { expiry(why); });
  watchdog.GenerationStarted();
  watchdog.StepBegan();
  watchdog.AbortRequested();
  ASSERT_TRUE(expiry.fired.WaitForNotificationWithTimeout(absl::Seconds(30)));
  absl::MutexLock lock(&expiry.mu);
  EXPECT_THAT(expiry.why, HasSubstr("has not stopped"));
  EXPECT_THAT(expiry.why, HasSubstr("waiting in collective #7"));
}

TEST(AbortWatchdog, NeverFiresForAGenerationThatStopped) {
  Expiry expiry;
  AbortWatchdog watchdog(
      absl::Milliseconds(100), [] { return ""; }, [&expiry](const std::string& why) { expiry(why); });
  watchdog.GenerationStarted();
  watchdog.AbortRequested();
  watchdog.GenerationEnded();
  // Many times the grace: a watchdog still armed would have fired.
  EXPECT_FALSE(expiry.fired.WaitForNotificationWithTimeout(absl::Seconds(1)));
  // Nor for a generation that was never aborted.
  watchdog.GenerationStarted();
  EXPECT_FALSE(expiry.fired.WaitForNotificationWithTimeout(absl::Milliseconds(500)));
}

// An idle worker is aborted too (forgotten by a restarted coordinator, or shutting down): with no
// generation to stop, the watchdog must not end the process.
TEST(AbortWatchdog, AnAbortBetweenGenerationsNeverFires) {
  Expiry expiry;
  AbortWatchdog watchdog(
      absl::Milliseconds(100), [] { return ""; }, [&expiry](const std::string& why) { expiry(why); });
  watchdog.AbortRequested();  // before any generation
  EXPECT_FALSE(expiry.fired.WaitForNotificationWithTimeout(absl::Seconds(1)));
  watchdog.GenerationStarted();
  watchdog.GenerationEnded();
  watchdog.AbortRequested();  // after one
  EXPECT_FALSE(expiry.fired.WaitForNotificationWithTimeout(absl::Seconds(1)));
}

TEST(AbortWatchdog, TheGraceIsAtLeastAFewOfTheSlowestSteps) {
  AbortWatchdog watchdog(
      absl::Milliseconds(10), [] { return ""; }, [](const std::string&) {});
  watchdog.GenerationStarted();
  EXPECT_EQ(watchdog.EffectiveGrace(), absl::Milliseconds(10));
  watchdog.StepBegan();
  absl::SleepFor(absl::Milliseconds(60));
  watchdog.StepBegan();
  EXPECT_GE(watchdog.EffectiveGrace(), AbortWatchdog::kStepsOfGrace * absl::Milliseconds(60));
  // A new generation forgets the last one's steps.
  watchdog.GenerationStarted();
  EXPECT_EQ(watchdog.EffectiveGrace(), absl::Milliseconds(10));
}

TEST(AbortWatchdog, AGenerationMayNeedMoreGrace) {
  AbortWatchdog watchdog(
      absl::Milliseconds(10), [] { return ""; }, [](const std::string&) {});
  watchdog.GenerationStarted();
  watchdog.NeedAtLeast(absl::Seconds(20));
  EXPECT_EQ(watchdog.EffectiveGrace(), absl::Seconds(20));
  watchdog.NeedAtLeast(absl::Seconds(5));
  EXPECT_EQ(watchdog.EffectiveGrace(), absl::Seconds(20));
  watchdog.GenerationStarted();
  EXPECT_EQ(watchdog.EffectiveGrace(), absl::Milliseconds(10));
}

TEST(AbortWatchdog, AZeroGraceIsOff) {
  Expiry expiry;
  AbortWatchdog watchdog(
      absl::ZeroDuration(), [] { return ""; }, [&expiry](const std::string& why) { expiry(why); });
  watchdog.GenerationStarted();
  watchdog.AbortRequested();
  EXPECT_FALSE(expiry.fired.WaitForNotificationWithTimeout(absl::Milliseconds(500)));
}

}  // namespace
}  // namespace gradsync::worker

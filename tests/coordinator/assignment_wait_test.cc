// Idle workers' assignment streams wait in Coordinator::NextAssignment. They must wake when their
// worker gets an assignment, is lost, or the coordinator shuts down, and must cost nothing while
// other calls go on: a wait that every release of the coordinator's lock re-checked made each
// heartbeat cost O(streams), and a coordinator of 1,000 simulated workers spent both cores on it
// (bench/README.md, scale).
#include <atomic>
#include <deque>
#include <optional>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "coordinator.h"
#include "coordinator_test_util.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

// Long enough that a waiter returns only when woken.
constexpr absl::Duration kLongWait = absl::Seconds(60);

class AssignmentWaitTest : public ::testing::Test {
 protected:
  AssignmentWaitTest() {
    CoordinatorOptions options;
    options.lease_timeout = absl::Seconds(6);
    options.artifact_root = "/tmp/gradsync-test-artifacts";
    options.clock = [this] { return now_.load(); };
    c_ = std::make_unique<Coordinator>(options, std::make_unique<InMemoryJobStore>());
  }
  ~AssignmentWaitTest() override {
    c_->Shutdown();
    for (std::thread& t : streams_) t.join();
  }

  using Outcome = absl::StatusOr<std::optional<v1::Assignment>>;

  // A stream of `worker` waiting for its next assignment; its outcome, once joined, is at the
  // pointer returned (the fixture's, so it outlives a stream still waiting when a test ends).
  const Outcome* Watch(const std::string& worker) {
    Outcome* out = &outcomes_.emplace_back();
    streams_.emplace_back([this, worker, out] { *out = c_->NextAssignment(worker, kLongWait); });
    return out;
  }
  // Until `n` streams wait (polled; nothing about time is asserted).
  void AwaitWaiters(int n) {
    while (c_->TEST_AssignmentWaits().waiters < n) absl::SleepFor(absl::Milliseconds(1));
  }
  void JoinStreams() {
    for (std::thread& t : streams_) t.join();
    streams_.clear();
  }

  std::atomic<absl::Time> now_{absl::FromUnixSeconds(1'700'000'000)};
  std::unique_ptr<Coordinator> c_;
  std::deque<Outcome> outcomes_;
  std::vector<std::thread> streams_;
};

TEST_F(AssignmentWaitTest, WaitingStreamGetsTheAssignmentOfAJobScheduledMeanwhile) {
  const Outcome* got = Watch(RegisterTestWorker(*c_, "h0"));
  AwaitWaiters(1);
  v1::JobSpec spec;
  spec.mutable_training()->set_world_size(1);
  spec.mutable_training()->set_max_steps(10);
  ASSERT_TRUE(c_->CreateJob(spec).ok());
  JoinStreams();
  ASSERT_TRUE(got->ok()) << got->status();
  ASSERT_TRUE((*got)->has_value()) << "the stream timed out instead of taking its assignment";
  EXPECT_EQ((**got)->rank(), 0);
}

TEST_F(AssignmentWaitTest, WaitingStreamEndsWhenItsWorkerIsLost) {
  const Outcome* got = Watch(RegisterTestWorker(*c_, "h0"));
  AwaitWaiters(1);
  now_ = now_.load() + absl::Seconds(7);
  c_->CheckLeases();
  JoinStreams();
  EXPECT_TRUE(absl::IsNotFound(got->status())) << got->status();
}

TEST_F(AssignmentWaitTest, WaitingStreamsEndAtShutdown) {
  const Outcome* a = Watch(RegisterTestWorker(*c_, "h0"));
  const Outcome* b = Watch(RegisterTestWorker(*c_, "h1"));
  AwaitWaiters(2);
  c_->Shutdown();
  JoinStreams();
  EXPECT_TRUE(absl::IsUnavailable(a->status())) << a->status();
  EXPECT_TRUE(absl::IsUnavailable(b->status())) << b->status();
}

TEST_F(AssignmentWaitTest, HeartbeatsDoNotRecheckWaitingStreams) {
  constexpr int kStreams = 8;
  constexpr int kHeartbeats = 100;
  for (int i = 0; i < kStreams; ++i) Watch(RegisterTestWorker(*c_, "idle"));
  v1::HeartbeatRequest beat;
  beat.set_worker_id(RegisterTestWorker(*c_, "beating"));
  AwaitWaiters(kStreams);
  const int64_t before = c_->TEST_AssignmentWaits().checks;
  for (int i = 0; i < kHeartbeats; ++i) ASSERT_EQ(c_->Heartbeat(beat).action(), v1::HeartbeatResponse::CONTINUE);
  const int64_t checks = c_->TEST_AssignmentWaits().checks - before;
  // Nothing a heartbeat does can give an idle worker an assignment; re-checking every waiting
  // stream on each one cost kStreams x kHeartbeats checks.
  EXPECT_LT(checks, kHeartbeats) << checks << " checks of " << kStreams << " waiting streams over " << kHeartbeats
                                 << " heartbeats";
}

}  // namespace
}  // namespace gradsync::coordinator

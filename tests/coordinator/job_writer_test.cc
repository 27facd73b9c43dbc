// Jobs reach the store outside the coordinator's lock: an older snapshot never overwrites a newer
// one, a heartbeat whose write is stuck in the database holds no other call up, and the API shows
// the change only once it is stored.
#include "job_writer.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "coordinator.h"
#include "coordinator_test_util.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

// An in-memory store whose next Update, once armed, waits inside the store until released.
class BlockingJobStore : public JobStore {
 public:
  void BlockNextUpdate() { armed_ = true; }
  void WaitUntilBlocked() { blocked_.WaitForNotification(); }
  void Release() { release_.Notify(); }

  absl::Status Insert(const v1::Job& job) override { return jobs_.Insert(job); }
  absl::Status Update(const v1::Job& job) override {
    if (armed_.exchange(false)) {
      blocked_.Notify();
      release_.WaitForNotification();
    }
    return jobs_.Update(job);
  }
  std::optional<v1::Job> Get(const std::string& id) const override { return jobs_.Get(id); }
  absl::StatusOr<std::vector<v1::Job>> List(const std::string& after_id, int limit) const override {
    return jobs_.List(after_id, limit);
  }

 private:
  std::atomic<bool> armed_{false};
  absl::Notification blocked_, release_;
  InMemoryJobStore jobs_;
};

v1::Job Job(const std::string& id, v1::JobState state) {
  v1::Job j;
  j.set_id(id);
  j.set_state(state);
  return j;
}

TEST(JobWriterTest, AnOlderSnapshotNeverOverwritesANewerOne) {
  auto store = std::make_unique<InMemoryJobStore>();
  InMemoryJobStore* stored = store.get();
  JobWriter writer(std::move(store));
  ASSERT_TRUE(writer.Insert(Job("a", v1::PENDING)).ok());
  EXPECT_EQ(writer.Insert(Job("a", v1::PENDING)).code(), absl::StatusCode::kAlreadyExists);
  // Two calls changed the job (versions 2 and 3) and write in the opposite order.
  writer.Write({{Job("a", v1::SUCCEEDED), 3}});
  writer.Write({{Job("a", v1::RUNNING), 2}});
  EXPECT_EQ(stored->Get("a")->state(), v1::SUCCEEDED);
  writer.Write({{Job("a", v1::CANCELLED), 4}});
  EXPECT_EQ(stored->Get("a")->state(), v1::CANCELLED);
  ASSERT_EQ(writer.LoadAll()->size(), 1u);
}

TEST(JobWriterTest, AHeartbeatWritingProgressHoldsNoOtherCallUp) {
  auto owned = std::make_unique<BlockingJobStore>();
  BlockingJobStore* store = owned.get();
  Coordinator c({}, std::move(owned));
  const std::string w0 = RegisterTestWorker(c, "h0"), w1 = RegisterTestWorker(c, "h1");
  v1::JobSpec spec;
  spec.mutable_training()->set_world_size(2);
  spec.mutable_training()->set_max_steps(100);
  const std::string id = c.CreateJob(spec)->id();
  const v1::Assignment a0 = TakeTestAssignment(c, w0), a1 = TakeTestAssignment(c, w1);

  // Rank 0's heartbeat carries progress, so it writes the job; the write sticks in the store.
  v1::HeartbeatRequest progress;
  progress.set_worker_id(w0);
  progress.set_job_id(id);
  progress.set_generation(a0.generation());
  progress.mutable_progress()->set_step(7);
  store->BlockNextUpdate();
  std::thread writer([&] { c.Heartbeat(progress); });
  store->WaitUntilBlocked();

  // Meanwhile rank 1 heartbeats and a client reads the job. Neither may wait for the write.
  absl::Notification answered;
  v1::Job seen;
  v1::HeartbeatResponse::Action action = v1::HeartbeatResponse::ACTION_UNSPECIFIED;
  std::thread others([&] {
    v1::HeartbeatRequest beat;
    beat.set_worker_id(w1);
    beat.set_job_id(id);
    beat.set_generation(a1.generation());
    action = c.Heartbeat(beat).action();
    seen = *c.GetJob(id);
    answered.Notify();
  });
  // A generous bound only so that a regression fails instead of hanging: the calls need no time.
  const bool in_time = answered.WaitForNotificationWithTimeout(absl::Seconds(30));
  store->Release();
  others.join();
  writer.join();
  ASSERT_TRUE(in_time) << "a call waited for another call's database write";
  EXPECT_EQ(action, v1::HeartbeatResponse::CONTINUE);
  EXPECT_NE(seen.progress().step(), 7) << "the API showed a change before it was stored";
  EXPECT_EQ(store->Get(id)->progress().step(), 7) << "the write landed";
  EXPECT_EQ(c.GetJob(id)->progress().step(), 7) << "and then the API shows it";
}

}  // namespace
}  // namespace gradsync::coordinator

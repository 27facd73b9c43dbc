// Hang diagnosis from heartbeats, with a fake clock: the coordinator names the rank that holds a
// stalled generation up and the bucket the others wait in.
#include "coordinator.h"
#include "coordinator_metrics.h"
#include "coordinator_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace gradsync::coordinator {
namespace {

using ::testing::HasSubstr;

class StallTest : public ::testing::Test {
 protected:
  StallTest() {
    CoordinatorOptions options;
    options.lease_timeout = absl::Seconds(60);
    options.stall_timeout = absl::Seconds(5);
    options.clock = [this] { return now_; };
    c_ = std::make_unique<Coordinator>(options, std::make_unique<InMemoryJobStore>());
    w0_ = RegisterTestWorker(*c_, "h0");
    w1_ = RegisterTestWorker(*c_, "h1");
    v1::JobSpec spec;
    spec.mutable_training()->set_world_size(2);
    spec.mutable_training()->set_max_steps(100);
    job_ = c_->CreateJob(spec)->id();
  }

  void Beat(const std::string& worker, int rank, int64_t step, int64_t issued, int64_t done,
            const std::string& activity) {
    v1::HeartbeatRequest hb;
    hb.set_worker_id(worker);
    hb.set_job_id(job_);
    hb.set_generation(1);
    hb.set_rank(rank);
    hb.set_step(step);
    hb.set_collective_seq(issued);
    hb.set_collective_done(done);
    hb.set_activity(activity);
    ASSERT_EQ(c_->Heartbeat(hb).action(), v1::HeartbeatResponse::CONTINUE);
  }

  std::vector<v1::JobEvent> Events(const std::string& type) {
    std::vector<v1::JobEvent> out;
    const v1::Job job = *c_->GetJob(job_);
    for (const auto& e : job.events()) {
      if (e.type() == type) out.push_back(e);
    }
    return out;
  }

  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  std::unique_ptr<Coordinator> c_;
  std::string w0_, w1_, job_;
};

TEST_F(StallTest, NamesTheRankBehindAndTheBucketTheOthersWaitIn) {
  // Both ranks train; then rank 1 stops issuing collectives mid-backward while rank 0 waits.
  for (int s = 1; s <= 3; ++s) {
    Beat(w0_, 0, s, 6 * s, 6 * s, "computing");
    Beat(w1_, 1, s, 6 * s, 6 * s, "computing");
    now_ += absl::Milliseconds(500);
  }
  Beat(w0_, 0, 3, 22, 20, "waiting in collective #20: all-reduce of gradient bucket 3 of 5, step 4");
  Beat(w1_, 1, 3, 20, 20, "computing step 4: 2 of 5 gradient buckets launched");
  for (int i = 0; i < 4; ++i) {
    now_ += absl::Seconds(1);
    c_->CheckLeases();
    Beat(w0_, 0, 3, 22, 20, "waiting in collective #20: all-reduce of gradient bucket 3 of 5, step 4");
    Beat(w1_, 1, 3, 20, 20, "computing step 4: 2 of 5 gradient buckets launched");
  }
  EXPECT_TRUE(Events("Stalled").empty()) << "4 s without progress is within the 5 s limit";
  CoordinatorMetrics metrics(c_.get());
  const std::string series = "gradsync_job_stalls_total{training_job=\"" + job_ + "\"} ";
  EXPECT_THAT(prometheus::TextSerializer().Serialize(metrics.Collect()), HasSubstr(series + "0"))
      << "a job is listed before its first stall";
  now_ += absl::Seconds(2);
  c_->CheckLeases();
  const auto stalled = Events("Stalled");
  ASSERT_EQ(stalled.size(), 1u);
  const std::string& m = stalled[0].message();
  EXPECT_THAT(m, HasSubstr("rank 1 (worker " + w1_ +
                           " on h1) is behind, at step 4, computing step 4: 2 of 5 gradient "
                           "buckets launched (collective #20 not issued)"));
  EXPECT_THAT(m, HasSubstr("rank 0 waits: waiting in collective #20: all-reduce of gradient bucket 3 of 5, step 4"));

  c_->CheckLeases();
  EXPECT_EQ(Events("Stalled").size(), 1u) << "one event per stall";
  EXPECT_THAT(prometheus::TextSerializer().Serialize(metrics.Collect()), HasSubstr(series + "1"));
  Beat(w1_, 1, 3, 23, 21, "waiting in collective #21");
  EXPECT_EQ(Events("StallCleared").size(), 1u);
}

TEST_F(StallTest, EveryRankInTheSameCollectiveBlamesTheTransport) {
  Beat(w0_, 0, 7, 40, 39, "waiting in collective #39: all-reduce of gradient bucket 2 of 5, step 8");
  Beat(w1_, 1, 7, 40, 39, "waiting in collective #39: all-reduce of gradient bucket 2 of 5, step 8");
  now_ += absl::Seconds(6);
  c_->CheckLeases();
  const auto stalled = Events("Stalled");
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_THAT(stalled[0].message(), HasSubstr("every rank waits in the same collective (waiting in collective #39"));
}

TEST_F(StallTest, SlowStepsRaiseTheLimit) {
  // Rank 0's steps take 4 s each: a 6 s pause is within three step times.
  for (int s = 1; s <= 3; ++s) {
    Beat(w0_, 0, s, 6 * s, 6 * s, "computing");
    Beat(w1_, 1, s, 6 * s, 6 * s, "computing");
    now_ += absl::Seconds(4);
  }
  now_ += absl::Seconds(6);
  c_->CheckLeases();
  EXPECT_TRUE(Events("Stalled").empty());
}

}  // namespace
}  // namespace gradsync::coordinator

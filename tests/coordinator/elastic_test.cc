// Elastic jobs (training.minWorkers..maxWorkers) in the coordinator, with a fake clock: the last
// call before a first generation, shrinking after a loss without leaving survivors behind, and
// growing into idle workers through a checkpoint.
#include <unistd.h>

#include <filesystem>

#include "absl/time/clock.h"
#include "coordinator.h"
#include "coordinator_test_util.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

namespace fs = std::filesystem;

class ElasticTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("elastic-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    CoordinatorOptions options;
    options.artifact_root = dir_.string();
    options.lease_timeout = absl::Seconds(6);
    options.rendezvous_last_call = absl::Seconds(2);
    options.scale_up_delay = absl::Seconds(30);
    options.clock = [this] { return now_; };
    c_ = std::make_unique<Coordinator>(options, std::make_unique<InMemoryJobStore>());
  }
  void TearDown() override { fs::remove_all(dir_); }

  v1::Job Submit(int min, int max) {
    v1::JobSpec spec;
    spec.set_name("elastic");
    spec.mutable_training()->set_min_workers(min);
    spec.mutable_training()->set_max_workers(max);
    spec.mutable_training()->set_max_steps(100);
    auto job = c_->CreateJob(spec);
    EXPECT_TRUE(job.ok()) << job.status();
    return *job;
  }

  v1::Assignment Take(const std::string& worker) { return TakeTestAssignment(*c_, worker); }

  // A heartbeat: in `a`'s generation, or idle when `a` is null.
  v1::HeartbeatResponse Beat(const std::string& worker, const v1::Assignment* a = nullptr) {
    v1::HeartbeatRequest hb;
    hb.set_worker_id(worker);
    if (a != nullptr) {
      hb.set_job_id(a->job_id());
      hb.set_generation(a->generation());
      hb.set_rank(a->rank());
    }
    return c_->Heartbeat(hb);
  }

  v1::Job Get(const v1::Job& job) { return *c_->GetJob(job.id()); }

  fs::path dir_;
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  std::unique_ptr<Coordinator> c_;
};

TEST_F(ElasticTest, StartsWithMaxWorkersAtOnce) {
  const std::string w0 = RegisterTestWorker(*c_, "h0"), w1 = RegisterTestWorker(*c_, "h1");
  const v1::Job job = Submit(1, 2);
  EXPECT_EQ(Get(job).state(), v1::RUNNING);
  EXPECT_EQ(Take(w0).world_size(), 2);
  EXPECT_EQ(Take(w1).world_size(), 2);
}

TEST_F(ElasticTest, WaitsALastCallForMoreThenStartsWithWhatIsIdle) {
  const std::string w0 = RegisterTestWorker(*c_, "h0");
  const v1::Job job = Submit(1, 3);
  EXPECT_EQ(Get(job).state(), v1::PENDING);
  EXPECT_EQ(Get(job).state_reason(), "1 of 1 to 3 workers idle; starting within 2s unless more join");
  const std::string w1 = RegisterTestWorker(*c_, "h1");
  now_ += absl::Seconds(1);
  c_->CheckLeases();
  EXPECT_EQ(Get(job).state(), v1::PENDING) << "still within the last call";
  now_ += absl::Seconds(1);
  c_->CheckLeases();
  ASSERT_EQ(Get(job).state(), v1::RUNNING);
  EXPECT_EQ(Take(w0).world_size(), 2);
  EXPECT_EQ(Take(w1).world_size(), 2);
}

TEST_F(ElasticTest, BelowMinWorkersItWaitsNamingTheRange) {
  RegisterTestWorker(*c_, "h0");
  const v1::Job job = Submit(2, 4);
  now_ += absl::Seconds(3);
  c_->CheckLeases();
  EXPECT_EQ(Get(job).state(), v1::PENDING);
  EXPECT_EQ(Get(job).state_reason(), "waiting for 2 to 4 idle workers: 1 idle of 1 registered");
}

TEST_F(ElasticTest, ALostWorkerShrinksTheJobOnceTheSurvivorIsBack) {
  const std::string w0 = RegisterTestWorker(*c_, "h0"), w1 = RegisterTestWorker(*c_, "h1");
  const v1::Job job = Submit(1, 2);
  const v1::Assignment a0 = Take(w0);
  Take(w1);
  now_ += absl::Seconds(4);
  Beat(w0, &a0);
  now_ += absl::Seconds(3);
  c_->CheckLeases();  // w1 is lost
  ASSERT_EQ(Get(job).state(), v1::RESTARTING);
  EXPECT_EQ(Get(job).events().rbegin()->type(), "WorkerLost");
  EXPECT_EQ(Get(job).state_reason(), "waiting for 1 workers of generation 1 to return");
  EXPECT_EQ(Beat(w0, &a0).action(), v1::HeartbeatResponse::ABORT);
  RegisterTestWorker(*c_, "spare");
  EXPECT_EQ(Get(job).state(), v1::RESTARTING) << "one idle spare is enough for minWorkers, but the survivor is coming";
  EXPECT_EQ(Get(job).state_reason(), "waiting for 1 workers of generation 1 to return");
  Beat(w0);  // the survivor stopped and is idle
  const v1::Job again = Get(job);
  EXPECT_EQ(again.state(), v1::RUNNING);
  EXPECT_EQ(again.generation(), 2);
  EXPECT_EQ(Take(w0).world_size(), 2) << "survivor plus spare";
}

TEST_F(ElasticTest, WithNoSpareTheSurvivorsGoOnAlone) {
  const std::string w0 = RegisterTestWorker(*c_, "h0"), w1 = RegisterTestWorker(*c_, "h1");
  const v1::Job job = Submit(1, 2);
  const v1::Assignment a0 = Take(w0);
  Take(w1);
  v1::ReportResultRequest failed;
  failed.set_worker_id(w1);
  failed.set_job_id(job.id());
  failed.set_generation(1);
  failed.set_rank(1);
  failed.set_error("UNAVAILABLE: connection reset");
  ASSERT_TRUE(c_->ReportResult(failed).ok());  // w1 is idle again, but its process is dying
  now_ += absl::Seconds(7);
  Beat(w0, &a0);
  c_->CheckLeases();  // w1 never heartbeats again: lost
  EXPECT_EQ(Beat(w0, &a0).action(), v1::HeartbeatResponse::ABORT);
  Beat(w0);
  const v1::Job again = Get(job);
  ASSERT_EQ(again.state(), v1::RUNNING);
  EXPECT_EQ(again.generation(), 2);
  EXPECT_EQ(Take(w0).world_size(), 1);
}

TEST_F(ElasticTest, GrowsIntoIdleWorkersThroughACheckpointWithoutCountingARestart) {
  const std::string w0 = RegisterTestWorker(*c_, "h0");
  const v1::Job job = Submit(1, 2);
  now_ += absl::Seconds(2);
  c_->CheckLeases();
  const v1::Assignment a0 = Take(w0);
  ASSERT_EQ(a0.world_size(), 1);

  const std::string w1 = RegisterTestWorker(*c_, "h1");
  EXPECT_FALSE(Beat(w0, &a0).checkpoint_requested()) << "the generation is younger than the scale-up delay";
  now_ += absl::Seconds(30);
  Beat(w0, &a0);
  Beat(w1);
  c_->CheckLeases();
  EXPECT_EQ(Get(job).events().rbegin()->type(), "ScaleUpRequested");
  ASSERT_TRUE(Beat(w0, &a0).checkpoint_requested());

  auto committed = ReportTestCheckpoint(*c_, w0, a0, 40);
  ASSERT_TRUE(committed.ok()) << committed.status();
  EXPECT_TRUE(committed->committed());
  EXPECT_EQ(Get(job).state(), v1::RESTARTING);
  EXPECT_EQ(Beat(w0, &a0).action(), v1::HeartbeatResponse::ABORT);
  Beat(w0);  // back in the pool
  // It starts once the checkpoint it resumes from is verified, on the verifier's thread.
  v1::Job grown = Get(job);
  for (const absl::Time deadline = absl::Now() + absl::Seconds(10);
       grown.state() != v1::RUNNING && absl::Now() < deadline; grown = Get(job)) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(grown.state(), v1::RUNNING) << grown.state_reason();
  EXPECT_EQ(grown.generation(), 2);
  EXPECT_EQ(grown.restarts(), 0);
  const v1::Assignment b0 = Take(w0), b1 = Take(w1);
  EXPECT_EQ(b0.world_size(), 2);
  EXPECT_EQ(b1.resume_from().step(), 40) << "the new generation resumes at the checkpoint";
}

TEST_F(ElasticTest, AJobOfFewerRanksThanMaxSucceedsWhenItsRanksAgree) {
  const std::string w0 = RegisterTestWorker(*c_, "h0");
  const v1::Job job = Submit(1, 4);
  now_ += absl::Seconds(2);
  c_->CheckLeases();
  const v1::Assignment a0 = Take(w0);
  v1::ReportResultRequest done;
  done.set_worker_id(w0);
  done.set_job_id(job.id());
  done.set_generation(a0.generation());
  done.set_rank(0);
  done.set_param_digest("abc");
  ASSERT_TRUE(c_->ReportResult(done).ok());
  EXPECT_EQ(Get(job).state(), v1::SUCCEEDED);
}

}  // namespace
}  // namespace gradsync::coordinator

// A job whose ranks fail during setup on two different workers is itself what fails (a model too
// large for a worker's memory, data that cannot be read): it ends FAILED with the cause instead of
// being retried on worker after worker. A setup failure on one worker still restarts the job, on
// another worker when one is idle; failures during training keep the restart budget as before.
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "coordinator.h"
#include "coordinator_test_util.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

constexpr char kOutOfMemory[] = "RESOURCE_EXHAUSTED: out of memory (std::bad_alloc)";

class SetupFailureTest : public ::testing::Test {
 protected:
  SetupFailureTest() {
    CoordinatorOptions options;
    c_ = std::make_unique<Coordinator>(options, std::make_unique<InMemoryJobStore>());
    w0_ = RegisterTestWorker(*c_, "h0");
    w1_ = RegisterTestWorker(*c_, "h1");
    v1::JobSpec spec;
    spec.mutable_training()->set_world_size(1);
    spec.mutable_training()->set_max_steps(100);
    id_ = c_->CreateJob(spec)->id();
  }

  void Fail(const std::string& worker, const v1::Assignment& a, const std::string& error, bool during_setup) {
    v1::ReportResultRequest r;
    r.set_worker_id(worker);
    r.set_job_id(a.job_id());
    r.set_generation(a.generation());
    r.set_rank(a.rank());
    r.set_error(error);
    r.set_during_setup(during_setup);
    ASSERT_TRUE(c_->ReportResult(r).ok());
  }

  v1::Job Job() { return *c_->GetJob(id_); }

  std::unique_ptr<Coordinator> c_;
  std::string w0_, w1_, id_;
};

TEST_F(SetupFailureTest, RanksFailingSetupOnTwoWorkersFailTheJobWithTheCause) {
  Fail(w0_, TakeTestAssignment(*c_, w0_), kOutOfMemory, /*during_setup=*/true);
  EXPECT_EQ(Job().restarts(), 1);
  // The retry goes to the worker that has not failed the job yet, though w0 is idle again first.
  const v1::Assignment retry = TakeTestAssignment(*c_, w1_);
  EXPECT_EQ(retry.generation(), 2);
  Fail(w1_, retry, kOutOfMemory, /*during_setup=*/true);

  const v1::Job job = Job();
  EXPECT_EQ(job.state(), v1::FAILED) << job.state_reason();
  EXPECT_EQ(job.restarts(), 1) << "not retried on a third worker";
  EXPECT_TRUE(
      absl::StrContains(job.state_reason(), "rank 0 on worker " + w1_ + " failed during setup: " + kOutOfMemory))
      << job.state_reason();
  EXPECT_TRUE(absl::StrContains(job.state_reason(), "failed during setup on 2 workers: not retried"))
      << job.state_reason();
  // Both workers are idle for the next job.
  v1::JobSpec next;
  next.mutable_training()->set_world_size(2);
  next.mutable_training()->set_max_steps(10);
  ASSERT_TRUE(c_->CreateJob(next).ok());
  EXPECT_EQ(TakeTestAssignment(*c_, w0_).world_size(), 2);
  EXPECT_EQ(TakeTestAssignment(*c_, w1_).world_size(), 2);
}

TEST_F(SetupFailureTest, FailuresDuringTrainingOrOnOneWorkerKeepTheRestartBudget) {
  constexpr char kPeerGone[] = "UNAVAILABLE: gloo: connection reset by peer";
  Fail(w0_, TakeTestAssignment(*c_, w0_), kPeerGone, /*during_setup=*/false);
  Fail(w0_, TakeTestAssignment(*c_, w0_), kOutOfMemory, /*during_setup=*/true);
  // Generation 3 runs on w1, which fails it in training: still no second setup failure.
  const v1::Assignment third = TakeTestAssignment(*c_, w1_);
  EXPECT_EQ(third.generation(), 3);
  Fail(w1_, third, kPeerGone, /*during_setup=*/false);

  const v1::Job job = Job();
  EXPECT_NE(job.state(), v1::FAILED) << job.state_reason();
  EXPECT_EQ(job.restarts(), 3);
  EXPECT_EQ(job.generation(), 4);
}

}  // namespace
}  // namespace gradsync::coordinator

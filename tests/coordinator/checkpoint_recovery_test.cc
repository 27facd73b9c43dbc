// Checkpoint commits and recovery in the coordinator, over real checkpoint files.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/time/clock.h"
#include "coordinator.h"
#include "coordinator_test_util.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

namespace fs = std::filesystem;

class CheckpointRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("ckpt-recovery-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    CoordinatorOptions options;
    options.artifact_root = dir_.string();
    c_ = std::make_unique<Coordinator>(options, std::make_unique<InMemoryJobStore>());
    worker_ = RegisterTestWorker(*c_, "h0");
  }
  void TearDown() override { fs::remove_all(dir_); }

  absl::StatusOr<v1::ReportCheckpointResponse> Checkpoint(const v1::Assignment& a, int64_t step) {
    return ReportTestCheckpoint(*c_, worker_, a, step);
  }

  // The next assignment; a restart waits for its checkpoint's verification, on another thread.
  v1::Assignment Take() {
    absl::StatusOr<std::optional<v1::Assignment>> a = c_->NextAssignment(worker_, absl::Seconds(20));
    EXPECT_TRUE(a.ok() && a->has_value()) << "no assignment within 20 s";
    return a.ok() && a->has_value() ? **a : v1::Assignment();
  }

  // The worker reports that `generation` of job `id` broke, as a failed collective does.
  absl::Status FailGeneration(const std::string& id, int generation) {
    v1::ReportResultRequest failed;
    failed.set_worker_id(worker_);
    failed.set_job_id(id);
    failed.set_generation(generation);
    failed.set_error("UNAVAILABLE: peer went away");
    return c_->ReportResult(failed);
  }

  fs::path dir_;
  std::unique_ptr<Coordinator> c_;
  std::string worker_;
};

TEST_F(CheckpointRecoveryTest, CommitsKeepsNAndResumesFromTheNewest) {
  v1::JobSpec spec;
  spec.mutable_training()->set_max_steps(100);
  spec.mutable_checkpoint()->set_keep(2);
  const std::string id = c_->CreateJob(spec)->id();
  const v1::Assignment a = Take();
  for (int64_t step : {10, 20, 30}) {
    auto r = Checkpoint(a, step);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->committed()) << "one rank: its report completes the checkpoint";
  }
  auto job = c_->GetJob(id);
  ASSERT_EQ(job->checkpoints_size(), 2);
  EXPECT_EQ(job->checkpoints(0).step(), 20);
  EXPECT_EQ(job->checkpoints(1).cursor(), 300);
  EXPECT_FALSE(fs::exists(ckpt::CheckpointDir(a.checkpoint_root(), 10))) << "retention keeps 2";
  EXPECT_TRUE(ckpt::VerifyCheckpoint(ckpt::CheckpointDir(a.checkpoint_root(), 30)).ok());

  ASSERT_TRUE(FailGeneration(id, 1).ok());
  const v1::Assignment resumed = Take();
  EXPECT_EQ(resumed.generation(), 2);
  EXPECT_EQ(resumed.resume_from().step(), 30);
}

TEST_F(CheckpointRecoveryTest, ACorruptCheckpointFallsBackToThePreviousOneWithAnEvent) {
  v1::JobSpec spec;
  spec.mutable_training()->set_max_steps(100);
  const std::string id = c_->CreateJob(spec)->id();
  const v1::Assignment a = Take();
  ASSERT_TRUE(Checkpoint(a, 10).ok());
  ASSERT_TRUE(Checkpoint(a, 20).ok());
  const std::string newest = ckpt::CheckpointDir(a.checkpoint_root(), 20);
  {
    std::fstream f(newest + "/" + ckpt::PartFileName(0), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x5a');
  }
  ASSERT_TRUE(FailGeneration(id, 1).ok());
  const v1::Assignment resumed = Take();
  EXPECT_EQ(resumed.resume_from().step(), 10) << "the corrupt step-20 checkpoint must be skipped";
  // The job as stored, which the verifier's thread writes once it releases the lock.
  bool said = false;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(10); !said && absl::Now() < deadline;) {
    const absl::StatusOr<v1::Job> job = c_->GetJob(id);
    ASSERT_TRUE(job.ok()) << job.status();
    for (const auto& e : job->events())
      said = said || (e.type() == "CheckpointCorrupt" && e.message().find("step 20") != std::string::npos);
    if (!said) absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(said) << "an event must say the checkpoint was corrupt";
  EXPECT_FALSE(fs::exists(newest)) << "set aside";
  EXPECT_TRUE(fs::exists(newest + ".corrupt-g2/" + ckpt::PartFileName(0))) << "kept for inspection";
  EXPECT_EQ(ckpt::ListCommitted(a.checkpoint_root()).size(), 1u);
  ASSERT_TRUE(Checkpoint(resumed, 20).ok()) << "the step can be checkpointed again, in a fresh directory";
  EXPECT_EQ(ckpt::ListCommitted(a.checkpoint_root()).size(), 2u);
}

TEST_F(CheckpointRecoveryTest, ReportsForAnEndedGenerationAreRefused) {
  v1::JobSpec spec;
  spec.mutable_training()->set_max_steps(100);
  const std::string id = c_->CreateJob(spec)->id();
  const v1::Assignment a = Take();
  // The first cancel lets the ranks stop and save; the second ends the generation at once.
  ASSERT_TRUE(c_->CancelJob(id).ok());
  ASSERT_TRUE(c_->CancelJob(id).ok());
  EXPECT_EQ(Checkpoint(a, 10).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gradsync::coordinator

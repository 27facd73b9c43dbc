// Worker reports are checked against who runs which rank: a worker outside the generation, a rank
// outside the world size, or a checkpoint directory outside the job's own root is refused, and
// the job goes on as if the forged report had never arrived.
#include <unistd.h>

#include <filesystem>

#include "absl/strings/match.h"
#include "coordinator.h"
#include "coordinator_test_util.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

namespace fs = std::filesystem;

class ReportOwnershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("report-ownership-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    CoordinatorOptions options;
    options.artifact_root = (dir_ / "artifacts").string();
    c_ = std::make_unique<Coordinator>(options, std::make_unique<InMemoryJobStore>());
    worker_ = RegisterTestWorker(*c_, "h0");
    v1::JobSpec spec;
    spec.mutable_training()->set_max_steps(100);
    id_ = c_->CreateJob(spec)->id();
    a_ = TakeTestAssignment(*c_, worker_);
    intruder_ = RegisterTestWorker(*c_, "h1");  // registered, idle, holds no rank of the job
  }
  void TearDown() override { fs::remove_all(dir_); }

  v1::ReportResultRequest Success(const std::string& worker, int rank) const {
    v1::ReportResultRequest r;
    r.set_worker_id(worker);
    r.set_job_id(id_);
    r.set_generation(a_.generation());
    r.set_rank(rank);
    r.set_param_digest("fnv1a64:forged");
    return r;
  }

  v1::JobState State() const { return c_->GetJob(id_)->state(); }

  fs::path dir_;
  std::unique_ptr<Coordinator> c_;
  std::string worker_, intruder_, id_;
  v1::Assignment a_;
};

TEST_F(ReportOwnershipTest, AWorkerOutsideTheGenerationCannotFinishOrFailTheJob) {
  absl::Status forged = c_->ReportResult(Success(intruder_, 0));
  EXPECT_EQ(forged.code(), absl::StatusCode::kPermissionDenied) << forged;
  EXPECT_TRUE(absl::StrContains(forged.message(), "does not run rank 0")) << forged;
  v1::ReportResultRequest failure = Success(intruder_, 0);
  failure.set_error("INTERNAL: made up");
  EXPECT_EQ(c_->ReportResult(failure).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(State(), v1::RUNNING);
  EXPECT_EQ(c_->GetJob(id_)->restarts(), 0);

  ASSERT_TRUE(c_->ReportResult(Success(worker_, 0)).ok());
  EXPECT_EQ(State(), v1::SUCCEEDED) << "the rank's own worker still finishes it";
}

TEST_F(ReportOwnershipTest, ARankOutsideTheWorldSizeIsRefusedNotThrown) {
  for (int rank : {1, -1, 2147483647}) {
    absl::Status s = c_->ReportResult(Success(worker_, rank));
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "has ranks 0 to 0")) << s;
  }
  EXPECT_EQ(State(), v1::RUNNING);
}

TEST_F(ReportOwnershipTest, ACheckpointOutsideTheJobsRootIsRefusedAndNothingIsWrittenThere) {
  const fs::path elsewhere = dir_ / "elsewhere" / "step-000000000010";
  v1::ReportCheckpointRequest r;
  r.set_worker_id(worker_);
  r.set_job_id(id_);
  r.set_generation(a_.generation());
  r.set_rank(0);
  r.set_step(10);
  r.set_dir(elsewhere.string());
  auto refused = c_->ReportCheckpoint(r);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied) << refused.status();
  EXPECT_FALSE(fs::exists(elsewhere / "MANIFEST.json"));
  EXPECT_FALSE(fs::exists(elsewhere));

  r.set_dir(ckpt::CheckpointDir(a_.checkpoint_root(), 10));
  r.set_worker_id(intruder_);
  EXPECT_EQ(c_->ReportCheckpoint(r).status().code(), absl::StatusCode::kPermissionDenied);

  auto own = ReportTestCheckpoint(*c_, worker_, a_, 10);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_TRUE(own->committed());
}

}  // namespace
}  // namespace gradsync::coordinator

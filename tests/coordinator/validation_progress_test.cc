// The validation loss in a job's progress: rank 0's heartbeats carry it, and a progress without one
// (a restarted generation that has not evaluated yet) keeps the last one the job had.
#include <optional>

#include "coordinator.h"
#include "coordinator_test_util.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

TEST(ValidationProgressTest, ProgressKeepsTheLastValidationLoss) {
  CoordinatorOptions options;
  options.artifact_root = "/tmp/gradsync-test-artifacts";
  Coordinator c(options, std::make_unique<InMemoryJobStore>());
  const std::string w0 = RegisterTestWorker(c, "h0");
  v1::JobSpec spec;
  spec.mutable_training()->set_max_steps(10);
  absl::StatusOr<v1::Job> job = c.CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  const v1::Assignment a = TakeTestAssignment(c, w0);
  auto beat = [&](int64_t step, std::optional<double> validation) {
    v1::HeartbeatRequest hb;
    hb.set_worker_id(w0);
    hb.set_job_id(a.job_id());
    hb.set_generation(a.generation());
    hb.set_rank(a.rank());
    hb.mutable_progress()->set_step(step);
    hb.mutable_progress()->set_loss(2.0);
    if (validation) {
      hb.mutable_progress()->set_validation_loss(*validation);
      hb.mutable_progress()->set_validation_step(step);
    }
    c.Heartbeat(hb);
    return c.GetJob(job->id())->progress();
  };
  EXPECT_FALSE(beat(1, std::nullopt).has_validation_loss());
  const v1::JobProgress evaluated = beat(4, 1.75);
  EXPECT_EQ(evaluated.validation_loss(), 1.75);
  EXPECT_EQ(evaluated.validation_step(), 4);
  const v1::JobProgress later = beat(6, std::nullopt);
  EXPECT_EQ(later.step(), 6);
  ASSERT_TRUE(later.has_validation_loss()) << "kept, not lost to a progress without one";
  EXPECT_EQ(later.validation_loss(), 1.75);
  EXPECT_EQ(later.validation_step(), 4);
  EXPECT_EQ(beat(8, 1.5).validation_loss(), 1.5);
}

}  // namespace
}  // namespace gradsync::coordinator

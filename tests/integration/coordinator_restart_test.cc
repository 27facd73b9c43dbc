// kill -9 of the coordinator mid-job: restarted on the same port and state directory, it has the
// job, the worker registers again by itself with the rank it runs, and the job runs to the end in
// the same generation (coordinator_adoption_test.cc checks the result against an uninterrupted run).
#include <signal.h>
#include <sys/wait.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

TEST(CoordinatorRestart, KillNineMidJobThenTheJobFinishesInTheSameGeneration) {
  const std::string dir = MakeTempDir();
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  const std::vector<std::string> coordinator = CoordinatorArgs(address, dir, {"--state_dir=" + dir + "/state"});
  pid_t c = StartBinary(coordinator, dir + "/coordinator-1.log");
  const pid_t w = StartBinary(WorkerArgs(address), dir + "/worker.log");

  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
  CommandResult submit =
      RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address, "--set", "training.worldSize=1",
                 "--set", "training.epochs=20", "--set", "training.logEvery=5"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err << ReadFile(dir + "/coordinator-1.log");
  const std::string job = submit.out.substr(0, submit.out.find('\n'));
  WaitForJob(address, job, absl::Seconds(30), [](const std::string& out) {
    return out.find("\"RUNNING\"") != std::string::npos && out.find("\"progress\"") != std::string::npos;
  });

  ::kill(c, SIGKILL);
  ::waitpid(c, nullptr, 0);
  c = StartBinary(coordinator, dir + "/coordinator-2.log");

  const std::string done = WaitForJob(address, job, absl::Seconds(120), [](const std::string& out) {
    return out.find("\"SUCCEEDED\"") != std::string::npos || out.find("\"FAILED\"") != std::string::npos;
  });
  EXPECT_NE(done.find("\"SUCCEEDED\""), std::string::npos) << done << ReadFile(dir + "/worker.log");
  EXPECT_NE(done.find("CoordinatorRestarted"), std::string::npos) << done;
  EXPECT_NE(done.find("\"GenerationAdopted\""), std::string::npos) << done;
  EXPECT_EQ(done.find("\"generation\": 2"), std::string::npos) << done;
  EXPECT_EQ(done.find("\"restarts\""), std::string::npos) << "restarts is 0, not printed: " << done;

  ::kill(w, SIGTERM);
  ::kill(c, SIGTERM);
  ::waitpid(w, nullptr, 0);
  ::waitpid(c, nullptr, 0);
}

// Preemption: SIGTERM to the coordinator checkpoints every running job before it exits (the job
// has no checkpoint policy of its own); the worker trains on, and the coordinator started again
// adopts its generation, so the checkpoint is a safety net that is not needed.
TEST(CoordinatorRestart, SigtermCheckpointsRunningJobsAndTheNextCoordinatorAdoptsThem) {
  const std::string dir = MakeTempDir();
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  const std::vector<std::string> coordinator =
      CoordinatorArgs(address, dir, {"--state_dir=" + dir + "/state", "--preempt_checkpoint_timeout_s=30"});
  pid_t c = StartBinary(coordinator, dir + "/coordinator-1.log");
  const pid_t w = StartBinary(WorkerArgs(address), dir + "/worker.log");
  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
  // About 15 s of training: the coordinator stops well before the end.
  CommandResult submit =
      RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address, "--set", "training.worldSize=1",
                 "--set", "model.mlp.hiddenDims=[1024,1024]", "--set", "training.microBatch=16", "--set",
                 "training.epochs=0", "--set", "training.maxSteps=3000", "--set", "training.logEvery=5"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string job = submit.out.substr(0, submit.out.find('\n'));
  WaitForJob(address, job, absl::Seconds(30), [](const std::string& out) {
    return out.find("\"RUNNING\"") != std::string::npos && out.find("\"progress\"") != std::string::npos;
  });

  ASSERT_EQ(::kill(c, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(c, &status, 0), c);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFile(dir + "/coordinator-1.log");
  c = StartBinary(coordinator, dir + "/coordinator-2.log");

  const std::string done = WaitForJob(address, job, absl::Seconds(120), [](const std::string& out) {
    return out.find("\"SUCCEEDED\"") != std::string::npos || out.find("\"FAILED\"") != std::string::npos;
  });
  EXPECT_NE(done.find("\"SUCCEEDED\""), std::string::npos) << done << ReadFile(dir + "/worker.log");
  EXPECT_NE(done.find("the coordinator is stopping (preemption)"), std::string::npos) << done;
  const size_t committed = done.find("\"CheckpointCommitted\"");
  ASSERT_NE(committed, std::string::npos) << "the preemption checkpoint was committed before the exit: " << done;
  EXPECT_NE(done.find("\"GenerationAdopted\"", committed), std::string::npos) << done;
  EXPECT_EQ(done.find("resuming from the checkpoint at step"), std::string::npos) << done;

  ::kill(w, SIGTERM);
  ::kill(c, SIGTERM);
  ::waitpid(w, nullptr, 0);
  ::waitpid(c, nullptr, 0);
}

}  // namespace
}  // namespace gradsync::testing

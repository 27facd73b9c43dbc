// The coordinator killed (kill -9) mid-job and replaced by a new process on the same state
// directory and port: its two workers train on, register again with the ranks they run, and the
// new coordinator adopts the generation. The job ends in generation 1 without a restart, with
// parameters bitwise identical to an uninterrupted run, and the workers take the next job.
#include <signal.h>
#include <sys/wait.h>

#include "absl/strings/str_cat.h"
#include "cli_harness.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

// About 6 s of training on two ranks, a checkpoint every 500 steps.
const std::vector<std::string> kJob = {"--set", "training.maxSteps=6000",    "--set", "training.epochs=0",
                                       "--set", "checkpoint.everySteps=500", "--set", "training.logEvery=50"};

TEST(CoordinatorAdoption, AReplacedCoordinatorAdoptsTheRunningJobWhichEndsAsIfUninterrupted) {
  std::vector<std::string> run = {"gradsync",    "run",        ExamplePath("mlp.yaml"), "-o", "json",
                                  "--state-dir", MakeTempDir()};
  run.insert(run.end(), kJob.begin(), kJob.end());
  const CommandResult reference = RunBinary(run);
  ASSERT_EQ(reference.exit_code, 0) << reference.out << reference.err;
  const std::string expected = ParseFlatJson(reference.out)["paramDigest"];
  ASSERT_FALSE(expected.empty()) << reference.out;

  const std::string dir = MakeTempDir();
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  const std::vector<std::string> coordinator = CoordinatorArgs(address, dir, {"--state_dir=" + dir + "/state"});
  Children children;
  const pid_t killed = children.Start(coordinator, dir + "/coordinator-1.log");
  for (const char* name : {"w0", "w1"}) {
    children.Start(WorkerArgs(address, {absl::StrCat("--name=", name)}), absl::StrCat(dir, "/", name, ".log"));
  }
  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
  std::vector<std::string> submit = {"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address};
  submit.insert(submit.end(), kJob.begin(), kJob.end());
  const CommandResult submitted = RunBinary(submit);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err << ReadFile(dir + "/coordinator-1.log");
  const std::string job = submitted.out.substr(0, submitted.out.find('\n'));
  WaitForJob(address, job, absl::Seconds(60), [](const std::string& out) {
    return out.find("\"RUNNING\"") != std::string::npos && out.find("CheckpointCommitted") != std::string::npos;
  });

  ASSERT_EQ(::kill(killed, SIGKILL), 0);
  children.Stop(killed);  // reaps it
  children.Start(coordinator, dir + "/coordinator-2.log");

  const std::string done = WaitForJob(address, job, absl::Seconds(120), [](const std::string& out) {
    return out.find("\"SUCCEEDED\"") != std::string::npos || out.find("\"FAILED\"") != std::string::npos;
  });
  const std::string logs = ReadFile(dir + "/w0.log") + ReadFile(dir + "/coordinator-2.log");
  EXPECT_NE(done.find("\"SUCCEEDED\""), std::string::npos) << done << logs;
  EXPECT_NE(done.find("generation 1 kept"), std::string::npos) << done;
  EXPECT_NE(done.find("\"GenerationAdopted\""), std::string::npos) << done << logs;
  EXPECT_EQ(done.find("\"generation\": 2"), std::string::npos) << "no new generation: " << done;
  EXPECT_EQ(done.find("\"restarts\""), std::string::npos) << "no restart (restarts is 0, not printed): " << done;
  EXPECT_EQ(done.find("resuming from the checkpoint"), std::string::npos) << done;
  EXPECT_NE(done.find(expected), std::string::npos)
      << "the final parameters differ from an uninterrupted run's (" << expected << "): " << done;

  // Both workers are back in the pool, under the registrations the adoption made.
  const CommandResult next = RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address, "--set",
                                        "training.maxSteps=50", "--set", "training.epochs=0"});
  ASSERT_EQ(next.exit_code, 0) << next.err;
  const std::string second =
      WaitForJob(address, next.out.substr(0, next.out.find('\n')), absl::Seconds(60), [](const std::string& out) {
        return out.find("\"SUCCEEDED\"") != std::string::npos || out.find("\"FAILED\"") != std::string::npos;
      });
  EXPECT_NE(second.find("\"SUCCEEDED\""), std::string::npos) << second << ReadFile(dir + "/w0.log");
}

}  // namespace
}  // namespace gradsync::testing

// Failure recovery with real processes: a worker killed mid-run is started again by the local
// cluster's supervisor, the coordinator restarts the job from its last committed checkpoint, and
// the job ends with parameters bitwise identical to an uninterrupted run.
#include <signal.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

const std::vector<std::string> kJob = {"--set", "training.maxSteps=2400", "--set", "training.epochs=0",
                                       "--set", "checkpoint.everySteps=200", "--set", "training.logEvery=20"};

// The job's progress step from `gradsync get -o json`, or -1.
int64_t ProgressStep(const std::string& address, const std::string& job) {
  CommandResult r = RunBinary({"gradsync", "get", job, "-o", "json", "--address", address});
  const size_t at = r.out.find("\"step\": \"");
  int64_t step = -1;
  if (at != std::string::npos) (void)absl::SimpleAtoi(r.out.substr(at + 9, r.out.find('"', at + 9) - at - 9), &step);
  return step;
}

TEST(Recovery, AKilledWorkerIsReplacedAndTheJobEndsBitwiseIdenticalToAnUninterruptedRun) {
  // The reference: the same job, uninterrupted.
  std::vector<std::string> run = {"gradsync", "run", ExamplePath("mlp.yaml"), "-o", "json", "--state-dir", MakeTempDir()};
  run.insert(run.end(), kJob.begin(), kJob.end());
  CommandResult reference = RunBinary(run);
  ASSERT_EQ(reference.exit_code, 0) << reference.out << reference.err;
  const std::string expected = ParseFlatJson(reference.out)["paramDigest"];
  ASSERT_FALSE(expected.empty());

  const std::string dir = MakeTempDir();
  CommandResult up = RunBinary({"gradsync", "local", "up", "--workers", "2", "--state-dir", dir});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  const std::string address = ParseFlatJson(up.out)["coordinator"];
  std::vector<std::string> submit = {"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address};
  submit.insert(submit.end(), kJob.begin(), kJob.end());
  CommandResult submitted = RunBinary(submit);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job = submitted.out.substr(0, submitted.out.find('\n'));

  // Past the second checkpoint, kill worker 0 without warning.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (ProgressStep(address, job) < 500 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(100));
  const std::vector<double> pids = ParseNumberList(ReadFile(dir + "/cluster.json"), "pids");
  ASSERT_EQ(pids.size(), 4u);
  ASSERT_EQ(::kill(static_cast<pid_t>(pids[2]), SIGKILL), 0);

  CommandResult watched = RunBinary({"gradsync", "watch", job, "--address", address, "-o", "json"});
  EXPECT_EQ(watched.exit_code, 0) << watched.out << watched.err;
  EXPECT_EQ(ParseFlatJson(watched.out)["state"], "SUCCEEDED") << watched.out;
  EXPECT_EQ(ParseFlatJson(watched.out)["paramDigest"], expected) << "recovery changed the result";
  EXPECT_EQ(ParseFlatJson(watched.out)["globalStep"], "2400");

  CommandResult got = RunBinary({"gradsync", "get", job, "-o", "json", "--address", address});
  EXPECT_NE(got.out.find("\"restarts\": 1"), std::string::npos) << got.out;
  EXPECT_NE(got.out.find("resuming from the checkpoint at step"), std::string::npos) << got.out;
  EXPECT_NE(got.out.find("CheckpointCommitted"), std::string::npos) << got.out;
  EXPECT_EQ(RunBinary({"gradsync", "local", "down", "--state-dir", dir}).exit_code, 0);
}

}  // namespace
}  // namespace gradsync::testing

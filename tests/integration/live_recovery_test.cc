// Live recovery with real processes (training.recovery "live", the default): a three-rank job with
// no checkpoint until its end loses a worker mid-run, by SIGKILL (an idle spare then joins), by
// SIGSTOP past its lease (the elastic job then shrinks to the two survivors), or two at once by
// SIGKILL (it goes on with the one survivor). The job must end
// SUCCEEDED with one restart, its next generation resumed from a survivor's memory (no checkpoint
// exists to read), the survivors' processes the same ones throughout, and the sample audit must
// show every sample trained exactly once per epoch over the steps that count.
#include <signal.h>
#include <sys/wait.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gtest/gtest.h"
#include "sample_audit.h"

namespace gradsync::testing {
namespace {

constexpr int64_t kSamples = 4000;  // ragged against the global batches of 3 ranks (48) and 2 (32)
constexpr int kEpochs = 3;

bool Has(const std::string& out, const std::string& what) { return out.find(what) != std::string::npos; }

class LiveRecovery : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(Faults, LiveRecovery, ::testing::Values("kill", "stop", "kill-two"));

TEST_P(LiveRecovery, ALostWorkerCostsOneStepAndNoCheckpointRead) {
  const bool kill = GetParam() == "kill", two = GetParam() == "kill-two";
  const std::string dir = MakeTempDir();
  const std::string samples = dir + "/samples";
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  Children children;
  children.Start(CoordinatorArgs(address, dir, {"--heartbeat_interval_ms=300", "--lease_timeout_ms=2000"}),
                 dir + "/coordinator.log");
  auto worker = [&](const std::string& name) {
    return children.Start(WorkerArgs(address, {"--name=" + name, "--sample_log_dir=" + samples}),
                          dir + "/" + name + ".log");
  };
  const pid_t a = worker("a"), b = worker("b"), c = worker("c");
  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
  CommandResult submit = RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address, "--set",
                                    "training.worldSize=3", "--set",
                                    absl::StrCat("training.minWorkers=", kill ? 3 : two ? 1 : 2), "--set",
                                    "model.mlp.hiddenDims=[1024,1024]", "--set", "training.microBatch=16", "--set",
                                    absl::StrCat("training.epochs=", kEpochs), "--set",
                                    absl::StrCat("data.synthetic.numSamples=", kSamples), "--set",
                                    "checkpoint.everySteps=0", "--set", "training.logEvery=5"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string job = submit.out.substr(0, submit.out.find('\n'));
  WaitForJob(address, job, absl::Seconds(60), [](const std::string& out) {
    return Has(out, "\"generation\": 1") && ProgressStep(out) >= 40;
  });
  // The spare registers once the three are busy, so it holds no rank of the first generation.
  if (kill) worker("d");
  ASSERT_EQ(::kill(c, GetParam() == "stop" ? SIGSTOP : SIGKILL), 0);
  if (two) ASSERT_EQ(::kill(b, SIGKILL), 0);

  const std::string done = WaitForJob(address, job, absl::Seconds(120), [](const std::string& out) {
    return Has(out, "\"SUCCEEDED\"") || Has(out, "\"FAILED\"");
  });
  if (GetParam() == "stop") ::kill(c, SIGCONT);
  ASSERT_TRUE(Has(done, "\"SUCCEEDED\"")) << done << ReadFile(dir + "/a.log");
  EXPECT_TRUE(Has(done, absl::StrCat("\"worldSize\": ", kill ? 3 : two ? 1 : 2))) << done;
  EXPECT_TRUE(Has(done, "\"restarts\": 1")) << done;
  EXPECT_TRUE(Has(done, "\"generation\": 2")) << done;
  EXPECT_TRUE(Has(done, "QuorumChanged")) << done;
  EXPECT_TRUE(Has(done, kill ? "joined: d-" : "joined: none")) << done;
  if (two) EXPECT_TRUE(Has(done, "1 ranks (was 3)")) << "one recovery for both losses: " << done;
  EXPECT_TRUE(Has(done, "resuming live at step")) << done;
  EXPECT_TRUE(Has(done, "\"Recovered\"")) << done;
  EXPECT_TRUE(Has(done, "\"liveRecoveries\": 1")) << done;
  EXPECT_FALSE(Has(done, "resuming from the checkpoint")) << done;
  // A committed step is lost only where a lost rank finished one its peers had not (proto3's JSON
  // leaves out a 0, and writes an int64 as a string).
  EXPECT_TRUE(!Has(done, "\"stepsLost\"") || Has(done, "\"stepsLost\": \"1\"")) << "more than one step lost: " << done;
  // The survivors trained on in the same processes, from the state they kept.
  EXPECT_EQ(::waitpid(a, nullptr, WNOHANG), 0) << "a survivor exited";
  if (!two) EXPECT_EQ(::waitpid(b, nullptr, WNOHANG), 0) << "a survivor exited";
  EXPECT_TRUE(Has(ReadFile(dir + "/a.log"), "for a live recovery")) << "nothing kept";
  ExpectEverySampleOncePerEpoch(ReadSampleLogs(samples), 2, kSamples, kEpochs);
}

}  // namespace
}  // namespace gradsync::testing

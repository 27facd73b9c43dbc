// An elastic job (minWorkers 1, maxWorkers 2) with real processes: it starts on one worker, grows
// to two when a second registers, shrinks back to one when that worker is killed with SIGKILL,
// and finishes. Every worker keeps a sample audit log; from it the test proves exact-once data
// coverage across the resize and the kill: the steps that count (each generation's steps up to
// the checkpoint the next one resumed from) train every sample of every epoch exactly once. So
// also with sharded optimizer state and parameters, which each resize reshards. Unsharded, the
// survivor keeps its state in memory and the last generation resumes from it (live recovery).
#include <signal.h>
#include <sys/wait.h>


#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "sample_audit.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

constexpr int64_t kSamples = 8190;  // ragged against both global batches (16 and 32): padding
constexpr int kEpochs = 4;

bool Has(const std::string& out, const std::string& what) { return out.find(what) != std::string::npos; }

// Unsharded, and with ddp.sharding "optimizer" and "full": each resize resumes the sharded checkpoint of
// another world size, whose shards the new ranks lay out again.
class Elastic : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(Sharding, Elastic, ::testing::Values("none", "optimizer", "full"));

TEST_P(Elastic, GrowsAndShrinksAndStillTrainsEverySampleExactlyOncePerEpoch) {
  const std::string dir = MakeTempDir();
  const std::string samples = dir + "/samples";
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  const pid_t coordinator =
      StartBinary(CoordinatorArgs(address, dir,
                                  {"--state_dir=" + dir + "/state", "--heartbeat_interval_ms=300",
                                   "--lease_timeout_ms=2000", "--rendezvous_last_call_ms=500", "--scale_up_delay_s=2"}),
                  dir + "/coordinator.log");
  auto worker = [&](const std::string& name) {
    return StartBinary(WorkerArgs(address, {"--name=" + name, "--sample_log_dir=" + samples}),
                       dir + "/" + name + ".log");
  };
  const pid_t a = worker("a");
  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
  CommandResult submit = RunBinary({"gradsync",
                                    "submit",
                                    ExamplePath("mlp.yaml"),
                                    "--address",
                                    address,
                                    "--set",
                                    "training.minWorkers=1",
                                    "--set",
                                    "training.maxWorkers=2",
                                    "--set",
                                    "training.worldSize=2",
                                    "--set",
                                    "model.mlp.hiddenDims=[1024,1024]",
                                    "--set",
                                    "training.microBatch=16",
                                    "--set",
                                    absl::StrCat("training.epochs=", kEpochs),
                                    "--set",
                                    absl::StrCat("data.synthetic.numSamples=", kSamples),
                                    "--set",
                                    "data.lastBatch=pad",
                                    "--set",
                                    "checkpoint.everySteps=100",
                                    "--set",
                                    "training.logEvery=5",
                                    "--set",
                                    "ddp.sharding=" + GetParam()});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string job = submit.out.substr(0, submit.out.find('\n'));

  // Generation 1: the one worker, after the last call.
  WaitForJob(address, job, absl::Seconds(30),
             [](const std::string& out) { return Has(out, "\"generation\": 1") && ProgressStep(out) >= 20; });
  const pid_t b = worker("b");
  // Generation 2: grown to two ranks through a checkpoint.
  const std::string grown = WaitForJob(address, job, absl::Seconds(40), [](const std::string& out) {
    return Has(out, "\"generation\": 2") && Has(out, "\"RUNNING\"") && Has(out, "with 2 ranks");
  });
  ASSERT_TRUE(Has(grown, "ScaleUpRequested")) << grown;
  const int64_t resumed = ProgressStep(grown);
  WaitForJob(address, job, absl::Seconds(40),
             [&](const std::string& out) { return ProgressStep(out) >= resumed + 30; });
  ASSERT_EQ(::kill(b, SIGKILL), 0);
  ::waitpid(b, nullptr, 0);

  const std::string done = WaitForJob(address, job, absl::Seconds(120), [](const std::string& out) {
    return Has(out, "\"SUCCEEDED\"") || Has(out, "\"FAILED\"");
  });
  ASSERT_TRUE(Has(done, "\"SUCCEEDED\"")) << done << ReadFile(dir + "/a.log");
  // The survivor's collective fails at once (its peer's connection closes), or the lease expires.
  EXPECT_TRUE(Has(done, "RankFailed") || Has(done, "WorkerLost")) << done;
  EXPECT_TRUE(Has(done, "\"restarts\": 1")) << "growing is not a restart; the kill is: " << done;
  EXPECT_TRUE(Has(done, "\"generation\": 3")) << done;
  EXPECT_TRUE(Has(done, "\"worldSize\": 1")) << "the job ends on the survivor alone: " << done;

  // The steps that count: generation g's steps up to where the next generation resumed.
  ExpectEverySampleOncePerEpoch(ReadSampleLogs(samples), 3, kSamples, kEpochs);
  if (GetParam() == "none") {
    // The survivor kept its state: the last generation resumed from its memory, not the disk.
    EXPECT_TRUE(Has(done, "QuorumChanged")) << done;
    EXPECT_TRUE(Has(done, "resuming live at step")) << done;
  } else {
    EXPECT_FALSE(Has(done, "QuorumChanged")) << "a sharded state is not whole on the survivor: " << done;
  }

  ::kill(a, SIGTERM);
  ::kill(coordinator, SIGTERM);
  ::waitpid(a, nullptr, 0);
  ::waitpid(coordinator, nullptr, 0);
}

}  // namespace
}  // namespace gradsync::testing

// Training on GPUs with real processes (skipped where no GPU is visible): gpt-tiny on the demo's
// text with one worker per GPU over NCCL, surviving a SIGKILL bitwise; two workers sharing one GPU
// over Gloo staged through host memory; and the fp32 GPU model following the CPU model.
#include <signal.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gradsync/ckpt/weights_file.h"
#include "gradsync/cluster/local_cluster_file.h"
#include "gradsync/device/device.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (device::ListGpus().empty()) GTEST_SKIP() << "no CUDA device visible: GPU training is not exercised"

double Number(std::map<std::string, std::string> json, const std::string& key) {
  double v = 0;
  EXPECT_TRUE(absl::SimpleAtod(json[key], &v)) << key << " = \"" << json[key] << "\"";
  return v;
}

// Every log under `dir`, concatenated: which placement ran is in the coordinator's and the
// workers' logs.
std::string Logs(const std::string& dir) {
  std::string all;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().extension() == ".log") all += ReadFile(entry.path().string());
  }
  return all;
}

std::vector<std::string> Demo(const std::vector<std::string>& head, const std::vector<std::string>& sets) {
  std::vector<std::string> args = head;
  for (const std::string& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  return args;
}

// Long enough that the kill lands between two checkpoints however fast the GPU steps: progress
// shows through heartbeats once a second, and the kill waits for step 1200 of 4000.
const std::vector<std::string> kOneRank = {"training.worldSize=1", "training.maxSteps=4000",
                                           "checkpoint.everySteps=1000", "training.logEvery=50"};

TEST(GpuTraining, OneWorkerOnItsGpuTrainsOverNcclAndRecoversBitwiseFromAKill) {
  SKIP_WITHOUT_GPU();
  const std::string ref_dir = MakeTempDir();
  CommandResult reference = RunBinary(
      Demo({"gradsync", "run", ExamplePath("demo.yaml"), "-o", "json", "--device", "cuda", "--state-dir", ref_dir},
           kOneRank));
  ASSERT_EQ(reference.exit_code, 0) << reference.out << reference.err;
  auto ref = ParseFlatJson(reference.out);
  EXPECT_LT(Number(ref, "finalLoss"), Number(ref, "initialLoss") - 1.0) << reference.out;
  const std::string logs = Logs(ref_dir);
  EXPECT_NE(logs.find("1 ranks over nccl"), std::string::npos) << "the placement must pick NCCL";
  EXPECT_NE(logs.find("cuda:0 bf16"), std::string::npos);

  const std::string dir = MakeTempDir();
  // The demo's text lies outside the working directory, the cluster's default data root.
  CommandResult up = RunBinary({"gradsync", "local", "up", "--workers", "1", "--device", "cuda", "--state-dir", dir,
                                "--data-root", "/usr/share/common-licenses"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  CommandResult submitted =
      RunBinary(Demo({"gradsync", "submit", ExamplePath("demo.yaml"), "--state-dir", dir}, kOneRank));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job = submitted.out.substr(0, submitted.out.find('\n'));
  WaitForJobWith({"--state-dir", dir}, job, absl::Seconds(300),
                 [](const std::string& out) { return ProgressStep(out) >= 1200; });
  absl::StatusOr<cluster::LocalClusterFile> cluster = cluster::ReadLocalClusterFile(dir);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::vector<pid_t> pids = cluster->pids;
  ASSERT_EQ(pids.size(), 3u);  // coordinator, metrics service, the worker
  ASSERT_EQ(::kill(pids[2], SIGKILL), 0);

  CommandResult watched = RunBinary({"gradsync", "watch", job, "--state-dir", dir, "-o", "json"});
  EXPECT_EQ(ParseFlatJson(watched.out)["state"], "SUCCEEDED") << watched.out << watched.err;
  EXPECT_EQ(ParseFlatJson(watched.out)["paramDigest"], ref["paramDigest"])
      << "resuming on the GPU from a checkpoint changed the result";
  CommandResult got = RunBinary({"gradsync", "get", job, "-o", "json", "--state-dir", dir});
  EXPECT_NE(got.out.find("resuming from the checkpoint at step"), std::string::npos) << got.out;
  RunBinary({"gradsync", "local", "down", "--state-dir", dir});
}

TEST(GpuTraining, TwoWorkersShareOneGpuOverGlooStagedThroughHostMemory) {
  SKIP_WITHOUT_GPU();
  const std::string dir = MakeTempDir();
  CommandResult run = RunBinary(Demo({"gradsync", "run", ExamplePath("demo.yaml"), "-o", "json", "--workers", "2",
                                      "--device", "cuda:0", "--state-dir", dir},
                                     {"training.maxSteps=100", "training.logEvery=10"}));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto out = ParseFlatJson(run.out);
  EXPECT_EQ(out["state"], "SUCCEEDED");
  EXPECT_NE(out["stateReason"].find("2 ranks agree"), std::string::npos) << run.out;
  EXPECT_LT(Number(out, "finalLoss"), Number(out, "initialLoss") - 0.5) << run.out;
  EXPECT_NE(Logs(dir).find("2 ranks over gloo"), std::string::npos) << "two ranks on one GPU cannot use NCCL";
}

// ddp.sharding "optimizer" end to end on one GPU shared by two ranks: each rank's checkpoint part
// holds its half of the state, the job ends with the ranks agreeing, and the weights equal an
// unsharded run's bit for bit (AdamW is elementwise; both runs all-reduce the same gradients).
TEST(GpuTraining, TwoRanksOnOneGpuShardTheOptimizerAndTrainBitwiseLikeUnsharded) {
  SKIP_WITHOUT_GPU();
  std::map<std::string, std::vector<float>> weights;
  for (const std::string sharding : {"none", "optimizer"}) {
    const std::string dir = MakeTempDir();
    CommandResult run = RunBinary(
        Demo({"gradsync", "run", ExamplePath("demo.yaml"), "-o", "json", "--workers", "2", "--device", "cuda:0",
              "--state-dir", dir},
             {"training.maxSteps=40", "checkpoint.everySteps=20", "model.precision=fp32", "ddp.sharding=" + sharding}));
    ASSERT_EQ(run.exit_code, 0) << sharding << ": " << run.out << run.err;
    auto out = ParseFlatJson(run.out);
    EXPECT_EQ(out["state"], "SUCCEEDED") << run.out;
    absl::StatusOr<ckpt::WeightsFile> w = ckpt::LoadWeights(out["weightsPath"]);
    ASSERT_TRUE(w.ok()) << w.status();
    weights[sharding] = w->values;
    if (sharding == "optimizer") {
      EXPECT_NE(Logs(dir).find("sharding optimizer"), std::string::npos) << "the replica names its sharding";
    }
  }
  ASSERT_EQ(weights["none"].size(), weights["optimizer"].size());
  EXPECT_TRUE(weights["none"] == weights["optimizer"]) << "sharded weights differ from unsharded";
}

// ddp.sharding "gradients" and "full" end to end on one GPU shared by two ranks, through the real
// reducer: buckets reduce-scattered as backward goes, the unowned gradient chunks given back to
// the device, and under "full" each unit's parameters gathered before it computes. The two modes
// differ only in where the parameters live, so their weights agree bit for bit.
TEST(GpuTraining, TwoRanksOnOneGpuShardGradientsAndParametersAndAgreeBitwise) {
  SKIP_WITHOUT_GPU();
  std::map<std::string, std::vector<float>> weights;
  for (const std::string sharding : {"gradients", "full"}) {
    const std::string dir = MakeTempDir();
    CommandResult run = RunBinary(
        Demo({"gradsync", "run", ExamplePath("demo.yaml"), "-o", "json", "--workers", "2", "--device", "cuda:0",
              "--state-dir", dir},
             {"training.maxSteps=40", "checkpoint.everySteps=20", "model.precision=fp32", "ddp.sharding=" + sharding}));
    ASSERT_EQ(run.exit_code, 0) << sharding << ": " << run.out << run.err;
    auto out = ParseFlatJson(run.out);
    EXPECT_EQ(out["state"], "SUCCEEDED") << run.out;
    EXPECT_LT(Number(out, "finalLoss"), Number(out, "initialLoss") - 0.5) << run.out;
    absl::StatusOr<ckpt::WeightsFile> w = ckpt::LoadWeights(out["weightsPath"]);
    ASSERT_TRUE(w.ok()) << w.status();
    weights[sharding] = w->values;
    EXPECT_NE(Logs(dir).find("sharding " + sharding), std::string::npos) << "the replica names its sharding";
  }
  ASSERT_EQ(weights["gradients"].size(), weights["full"].size());
  EXPECT_TRUE(weights["gradients"] == weights["full"]) << "fully sharded weights differ from sharded gradients'";
}

TEST(GpuTraining, Fp32OnTheGpuFollowsTheCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::string> sets = {"training.worldSize=1", "training.maxSteps=50", "model.precision=fp32"};
  std::map<std::string, std::map<std::string, std::string>> result;
  for (const std::string device : {"cpu", "cuda"}) {
    CommandResult run = RunBinary(Demo(
        {"gradsync", "run", ExamplePath("demo.yaml"), "-o", "json", "--device", device, "--state-dir", MakeTempDir()},
        device == "cpu" ? std::vector<std::string>{"training.worldSize=1", "training.maxSteps=50"} : sets));
    ASSERT_EQ(run.exit_code, 0) << device << ": " << run.out << run.err;
    result[device] = ParseFlatJson(run.out);
  }
  EXPECT_NEAR(Number(result["cuda"], "initialLoss"), Number(result["cpu"], "initialLoss"), 1e-4);
  EXPECT_NEAR(Number(result["cuda"], "finalLoss"), Number(result["cpu"], "finalLoss"),
              0.02 * Number(result["cpu"], "finalLoss"));
}

}  // namespace
}  // namespace gradsync::testing

// How a job ends, end to end with real processes: what it leaves behind and what its summary says.
// A finished job leaves a committed checkpoint at its last step (none was written at the end); a
// cancelled one its weights and a checkpoint at the step boundary after the cancel (it left none);
// a job with ddp.ignoreParams succeeds (every one failed with "replica divergence"), also one naming
// a llama's RoPE buffers; a failed job's
// summary says the step and losses it reached (it said 0).
#include <signal.h>

#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli_harness.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/ckpt/weights_file.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  CommandResult cmd;
  std::map<std::string, std::string> summary;
  std::string state_dir;
};

// `gradsync run EXAMPLE -o json` with `sets` (each a --set), in a fresh state directory.
RunResult RunExample(const std::string& example, const std::vector<std::string>& sets,
                     const std::vector<std::string>& extra = {}) {
  RunResult r;
  r.state_dir = MakeTempDir();
  std::vector<std::string> args = {"gradsync", "run", ExamplePath(example), "-o", "json", "--state-dir", r.state_dir};
  for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
  args.insert(args.end(), extra.begin(), extra.end());
  r.cmd = RunBinary(args);
  r.summary = ParseFlatJson(r.cmd.out);
  return r;
}

double Num(const std::map<std::string, std::string>& fields, const std::string& key) {
  double v = -1;
  auto it = fields.find(key);
  if (it != fields.end() && !absl::SimpleAtod(it->second, &v)) v = -1;
  return v;
}

std::string Diagnose(const RunResult& r) {
  return absl::StrCat("exit ", r.cmd.exit_code, "\nstdout:\n", r.cmd.out, "\nstderr:\n", r.cmd.err);
}

std::vector<int64_t> CommittedSteps(const std::string& checkpoint_root) {
  std::vector<int64_t> steps;
  for (const v1::CheckpointManifest& m : ckpt::ListCommitted(checkpoint_root)) steps.push_back(m.step());
  return steps;
}

// The values of parameter `name` in a weights file or checkpoint part's buffer laid out by `layout`.
std::vector<float> ParamValues(const nn::ParamLayout& layout, const std::vector<float>& values,
                               const std::string& name) {
  for (int i = 0; i < layout.size(); ++i) {
    if (layout.param(i).name == name) {
      const std::span<const float> v = layout.View(std::span<const float>(values), i);
      return {v.begin(), v.end()};
    }
  }
  ADD_FAILURE() << "no parameter " << name;
  return {};
}

// 40 steps, a checkpoint every 20 and one kept: the last step's checkpoint is committed once (not
// twice as a multiple of everySteps and as the last), and retention still applies.
TEST(JobEnd, AFinishedJobLeavesACommittedCheckpointAtItsLastStep) {
  const RunResult r = RunExample(
      "mlp.yaml", {"training.maxSteps=40", "training.epochs=0", "checkpoint.everySteps=20", "checkpoint.keep=1"});
  ASSERT_EQ(r.cmd.exit_code, 0) << Diagnose(r);
  EXPECT_EQ(r.summary.at("state"), "SUCCEEDED");
  const std::string root = r.state_dir + "/artifacts/" + r.summary.at("id") + "/checkpoints";
  EXPECT_EQ(CommittedSteps(root), (std::vector<int64_t>{40})) << "keep 1: step 20 went, step 40 stays";
  EXPECT_TRUE(ckpt::VerifyCheckpoint(ckpt::CheckpointDir(root, 40)).ok());
}

// The demo with its final layer norm's weight ignored (rank-local, as in DDP): it succeeds. The
// weights file holds rank 0's copy of the ignored parameter; the checkpoint keeps each rank's own.
TEST(JobEnd, TheDemoWithAnIgnoredParameterSucceedsAndSavesRankZerosCopy) {
  const RunResult r = RunExample("demo.yaml", {"training.maxSteps=4", "training.microBatch=2", "training.logEvery=1",
                                               "ddp.ignoreParams=[\"lnf.weight\"]"});
  ASSERT_EQ(r.cmd.exit_code, 0) << Diagnose(r);
  EXPECT_EQ(r.summary.at("state"), "SUCCEEDED") << r.cmd.out;
  EXPECT_EQ(Num(r.summary, "globalStep"), 4);

  const std::string dir = ckpt::CheckpointDir(r.state_dir + "/artifacts/" + r.summary.at("id") + "/checkpoints", 4);
  absl::StatusOr<v1::CheckpointManifest> m = ckpt::ReadManifest(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<std::vector<float>> parts(2);
  for (const v1::CheckpointPart& p : m->parts()) {
    absl::StatusOr<ckpt::RankState> s = ckpt::ReadRankPart(dir, p);
    ASSERT_TRUE(s.ok()) << s.status();
    parts.at(p.rank()) = ParamValues(s->layout, s->params, "lnf.weight");
  }
  EXPECT_NE(parts[0], parts[1]) << "each rank trained its own lnf.weight";
  absl::StatusOr<ckpt::WeightsFile> w = ckpt::LoadWeights(r.summary.at("weightsPath"));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(ParamValues(w->layout, w->values, "lnf.weight"), parts[0]) << "the weights file holds rank 0's copy";
}

// MiniMind's `_ddp_params_and_buffers_to_ignore = {"freqs_cos", "freqs_sin"}` copied into a llama
// job failed it ("matches no parameter"): the RoPE tables are buffers, never synchronised. Now the
// job trains, and its events say why nothing was done for them.
TEST(JobEnd, ALlamaIgnoringItsRopeBuffersTrainsAndSaysWhy) {
  const RunResult r = RunExample("demo.yaml", {"model.transformer.flavour=llama", "training.maxSteps=2",
                                               "training.microBatch=2", "ddp.ignoreParams=[freqs_cos, freqs_sin]"});
  ASSERT_EQ(r.cmd.exit_code, 0) << Diagnose(r);
  EXPECT_EQ(r.summary.at("state"), "SUCCEEDED") << r.cmd.out;
  EXPECT_NE(r.cmd.err.find("[IgnoredBuffers] ddp.ignoreParams: freqs_cos, freqs_sin are the model's RoPE tables"),
            std::string::npos)
      << Diagnose(r);
}

// A job that fails after some steps (a worker killed, no restart allowed): its summary says how far
// it got, from the surviving rank's report or rank 0's progress, and its first loss.
TEST(JobEnd, AFailedJobsSummaryReportsTheStepAndLossesReached) {
  const std::string dir = MakeTempDir();
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  Children children;
  children.Start(CoordinatorArgs(address, dir, {"--heartbeat_interval_ms=100", "--lease_timeout_ms=2000"}),
                 dir + "/coordinator.log");
  children.Start(WorkerArgs(address, {"--name=a"}), dir + "/a.log");
  const pid_t b = children.Start(WorkerArgs(address, {"--name=b"}), dir + "/b.log");
  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
  CommandResult submit =
      RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address, "--set",
                 "training.maxSteps=10000000", "--set", "training.epochs=0", "--set", "training.logEvery=1", "--set",
                 "training.maxRestarts=0", "--set", "checkpoint.everySteps=20"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string job = submit.out.substr(0, submit.out.find('\n'));
  // Rank 0's progress, not a checkpoint's step (ProgressStep reads the first "step" of the job).
  const std::string running = WaitForJob(address, job, absl::Seconds(60), [](const std::string& out) {
    return out.find("\"progress\": {") != std::string::npos && ProgressStep(out) > 20;
  });
  const int64_t seen = ProgressStep(running);
  ASSERT_EQ(::kill(b, SIGKILL), 0);

  const CommandResult watched = RunBinary({"gradsync", "watch", job, "-o", "json", "--address", address});
  const std::map<std::string, std::string> summary = ParseFlatJson(watched.out);
  ASSERT_EQ(summary.count("state"), 1u) << watched.out << watched.err;
  EXPECT_EQ(summary.at("state"), "FAILED")
      << watched.out << RunBinary({"gradsync", "get", job, "-o", "json", "--address", address}).out;
  EXPECT_GE(Num(summary, "globalStep"), seen) << watched.out;
  EXPECT_GT(Num(summary, "initialLoss"), 0) << watched.out;
  EXPECT_GT(Num(summary, "finalLoss"), 0) << watched.out;
  EXPECT_LT(Num(summary, "finalLoss"), Num(summary, "initialLoss")) << "the loss fell before the failure";
}

// Cancel a running job: the ranks stop at the next step boundary, rank 0 writes the weights and every
// rank its part of a checkpoint there; the job ends CANCELLED with that result.
TEST(JobEnd, CancellingARunningJobWritesItsWeightsAndACheckpointAtTheNextStepBoundary) {
  const std::string dir = MakeTempDir();
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  Children children;
  children.Start(CoordinatorArgs(address, dir), dir + "/coordinator.log");
  children.Start(WorkerArgs(address, {"--name=a"}), dir + "/a.log");
  children.Start(WorkerArgs(address, {"--name=b"}), dir + "/b.log");
  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
  CommandResult submit =
      RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address, "--set",
                 "training.maxSteps=10000000", "--set", "training.epochs=0", "--set", "training.logEvery=1"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string job = submit.out.substr(0, submit.out.find('\n'));
  WaitForJob(address, job, absl::Seconds(60), [](const std::string& out) { return ProgressStep(out) > 0; });

  CommandResult cancel = RunBinary({"gradsync", "cancel", job, "--address", address});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(cancel.out, job + " CANCELLED\n") << cancel.err;
  const std::map<std::string, std::string> done =
      ParseFlatJson(RunBinary({"gradsync", "get", job, "-o", "json", "--address", address}).out);
  EXPECT_EQ(done.at("state"), "CANCELLED");
  EXPECT_NE(done.at("stateReason").find("cancelled by request: stopped at step"), std::string::npos)
      << done.at("stateReason");
  const std::string job_dir = dir + "/artifacts/" + job.substr(5);
  absl::StatusOr<ckpt::WeightsFile> w = ckpt::LoadWeights(job_dir + "/weights.bin");
  EXPECT_TRUE(w.ok()) << w.status() << ReadFile(dir + "/a.log");
  const std::vector<v1::CheckpointManifest> committed = ckpt::ListCommitted(job_dir + "/checkpoints");
  ASSERT_EQ(committed.size(), 1u) << ReadFile(dir + "/coordinator.log");
  EXPECT_GT(committed[0].step(), 0);
  EXPECT_NE(done.at("stateReason").find(absl::StrCat("stopped at step ", committed[0].step(), ",")), std::string::npos)
      << "the checkpoint is at the step the ranks stopped at: " << done.at("stateReason");
}

}  // namespace
}  // namespace gradsync::testing

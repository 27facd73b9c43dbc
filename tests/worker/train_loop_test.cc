// train::TrainConfigFromAssignment reads every choice of the spec and the placement once; train::TrainLoop, on
// two CPU ranks, steps to the end with the replicas identical, as Train does, and drifts apart
// only in no_sync mode; it reads no data file outside the coordinator's data roots.
#include "gradsync/train/train_loop.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gloo_ranks.h"
#include "gmock/gmock.h"
#include "gradsync/ckpt/weights_file.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"
#include "replica_test_util.h"

namespace gradsync::worker {
namespace {

// The mlp on 200 synthetic samples, micro-batch 8 on each of two ranks: 13 steps in one epoch.
v1::Assignment MlpAssignment(int rank, const std::vector<std::string>& overrides = {}) {
  absl::StatusOr<v1::JobSpec> spec =
      spec::Normalize(*spec::ParseJobSpec("model: {preset: mlp, device: cpu}\ndata: {synthetic: {numSamples: 200}}\n"
                                          "training: {worldSize: 2, microBatch: 8, seed: 3, logEvery: 5}",
                                          "train-loop-test.yaml", overrides));
  EXPECT_TRUE(spec.ok()) << spec.status();
  v1::Assignment a;
  a.set_job_id("train-loop-test");
  a.set_generation(1);
  a.set_rank(rank);
  a.set_world_size(2);
  if (spec.ok()) *a.mutable_spec() = *spec;
  a.set_weights_path(absl::StrCat(::testing::TempDir(), "/train-loop-test-weights.bin"));
  a.mutable_placement()->set_device("cpu");
  a.mutable_placement()->set_backend("gloo");
  a.mutable_placement()->set_precision("fp32");
  return a;
}

train::ReplicaOptions CpuWorker(comm::KvClient* kv) {
  train::ReplicaOptions o;
  o.device.set_kind(v1::Device::CPU);
  o.kv = kv;
  return o;
}

TEST(TrainConfig, ReadsEveryChoiceOfTheSpecAndThePlacement) {
  const absl::StatusOr<train::TrainConfig> c = train::TrainConfigFromAssignment(
      MlpAssignment(1, {"data.lastBatch=pad", "training.lrSchedule=constant", "ddp.gradCompression=bf16",
                        "ddp.transport=tcp", "ddp.timeoutSeconds=20", "checkpoint.everySeconds=30"}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rank, 1);
  EXPECT_EQ(c->placement.device, spec::Device::kCpu);
  EXPECT_EQ(c->placement.backend, spec::Backend::kGloo);
  EXPECT_EQ(c->sampler.last_batch, spec::LastBatch::kPad);
  EXPECT_EQ(c->Shard(200).global_batch(), 16);
  EXPECT_EQ(c->Shard(200).last_batch, ddp::LastBatch::kPad);
  EXPECT_FALSE(c->Schedule(13).cosine);
  EXPECT_EQ(c->reducer.wire, comm::WireType::kBFloat16);
  EXPECT_FALSE(c->shared_memory);
  EXPECT_EQ(c->comm_timeout, absl::Seconds(20));
  EXPECT_EQ(c->reducer.timeout, absl::Seconds(20));
  EXPECT_EQ(c->checkpoint_every, absl::Seconds(30));
  EXPECT_EQ(c->tokens_per_sample, 1);

  v1::Assignment bad = MlpAssignment(0);
  bad.mutable_spec()->mutable_data()->set_last_batch("keep");
  EXPECT_EQ(train::TrainConfigFromAssignment(bad).status().message(),
            "data.lastBatch: must be one of partial, drop, pad, got \"keep\"");
}

struct RankRun {
  std::string digest;
  int reports = 0;
  int64_t total_steps = 0;
  absl::Status after_done;
  // The parameters after Finish, and the steps of the checkpoints the rank wrote.
  std::vector<float> params;
  std::vector<int64_t> checkpoints;
  // The memory of the last step report and of the result, and what the replica holds at the end.
  v1::RankMemory step_memory;
  v1::JobResult result;
  train::MemoryFootprint held;
};

// Both ranks, each on its thread: Train when `by_hand` is false, else the loop stepped here with
// `sync` (the first step always all-reduces). `overrides` change the spec; checkpoints go under
// `checkpoint_root` when it is set.
std::vector<RankRun> RunBothRanks(const std::string& job, bool by_hand,
                                  train::GradSync sync = train::GradSync::kAllReduce,
                                  const std::vector<std::string>& overrides = {},
                                  const std::string& checkpoint_root = "") {
  testing::CoordinatorServer server;
  std::vector<RankRun> runs(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      auto kv = server.Kv(job);
      v1::Assignment a = MlpAssignment(rank, overrides);
      a.set_checkpoint_root(checkpoint_root);
      const train::TrainConfig config = ConfigOf(a);
      auto replica = train::CreateReplica(config, CpuWorker(kv.get()));
      ASSERT_TRUE(replica.ok()) << replica.status();
      RankRun& run = runs[rank];
      train::TrainHooks hooks;
      hooks.kv = kv.get();
      hooks.epoch_seed = [&](int epoch) -> absl::StatusOr<uint64_t> { return ddp::EpochSeed(config.seed, epoch); };
      hooks.on_step = [&](const v1::StepReport& r) {
        ++run.reports;
        run.step_memory = r.memory();
      };
      hooks.on_checkpoint = [&](const v1::ReportCheckpointRequest& r) { run.checkpoints.push_back(r.step()); };
      absl::StatusOr<train::TrainOutcome> outcome;
      if (by_hand) {
        auto loop = train::TrainLoop::Start(config, **replica, hooks);
        ASSERT_TRUE(loop.ok()) << loop.status();
        run.total_steps = (*loop)->total_steps();
        for (bool first = true; !(*loop)->done(); first = false) {
          ASSERT_TRUE((*loop)->Step(first ? train::GradSync::kAllReduce : sync).ok());
        }
        run.after_done = (*loop)->Step();
        outcome = (*loop)->Finish();
      } else {
        outcome = Train(config, **replica, hooks);
      }
      ASSERT_TRUE(outcome.ok()) << outcome.status();
      EXPECT_EQ(outcome->result.global_step(), 13);
      run.digest = outcome->param_digest;
      run.result = outcome->result;
      run.held = (*replica)->Memory();
      absl::StatusOr<std::vector<float>> params = (*replica)->HostParams();
      ASSERT_TRUE(params.ok()) << params.status();
      run.params = *std::move(params);
    });
  }
  for (std::thread& t : threads) t.join();
  return runs;
}

TEST(TrainLoop, StepsToTheEndWithTheRanksIdenticalAsTrainDoes) {
  const std::vector<RankRun> loop = RunBothRanks("by-hand", true);
  EXPECT_EQ(loop[0].total_steps, 13);
  EXPECT_EQ(loop[0].reports, 13);
  EXPECT_EQ(loop[1].reports, 13);
  EXPECT_EQ(loop[0].after_done.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(loop[0].digest.empty());
  EXPECT_EQ(loop[0].digest, loop[1].digest) << "all-reduced replicas stay identical";

  const std::vector<RankRun> train = RunBothRanks("train", false);
  EXPECT_EQ(train[0].digest, loop[0].digest) << "Train is the loop run to the end";
}

// Every step report and the result carry the rank's memory: what its replica holds (here each
// rank's half of AdamW's state) and its process's peak.
TEST(TrainLoop, StepReportsAndTheResultCarryTheRanksMemory) {
  const std::vector<RankRun> runs =
      RunBothRanks("memory", false, train::GradSync::kAllReduce, {"ddp.sharding=optimizer"});
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(absl::StrCat("rank ", rank));
    const RankRun& run = runs[rank];
    ASSERT_GT(run.held.optimizer, 0);
    EXPECT_LT(run.held.optimizer, 2 * run.held.params) << "a shard of the moments, not all of them";
    ASSERT_EQ(run.result.memory_size(), 1) << "its own; the coordinator gathers the others";
    for (const v1::RankMemory& m : {run.step_memory, run.result.memory(0)}) {
      EXPECT_EQ(m.rank(), rank);
      EXPECT_EQ(m.param_bytes(), run.held.params);
      EXPECT_EQ(m.grad_bytes(), run.held.grads);
      EXPECT_EQ(m.optimizer_bytes(), run.held.optimizer);
      EXPECT_GT(m.peak_rss_bytes(), 0);
      EXPECT_EQ(m.peak_device_bytes(), 0);
    }
  }
}

TEST(TrainLoop, LocalOnlyStepsLeaveTheRanksApart) {
  const std::vector<RankRun> apart = RunBothRanks("local-only", true, train::GradSync::kLocalOnly);
  EXPECT_NE(apart[0].digest, apart[1].digest) << "each rank stepped on its own gradients";
}

// Ignored parameters are each rank's own (DDP's params_and_buffers_to_ignore): they drift apart by
// design. The digest the coordinator compares covered them, so every job with one failed at the
// end with "replica divergence"; now it covers the synchronised parameters only.
TEST(TrainLoop, TheDigestLeavesIgnoredParametersOutAndAgreesAcrossRanks) {
  const std::vector<RankRun> runs =
      RunBothRanks("ignored", false, train::GradSync::kAllReduce, {"ddp.ignoreParams=[\"layers.0.bias\"]"});
  ASSERT_EQ(runs[0].params.size(), runs[1].params.size());
  EXPECT_NE(runs[0].params, runs[1].params) << "the ignored bias trained on each rank's own data";
  EXPECT_EQ(runs[0].digest, runs[1].digest) << "the synchronised parameters agree";
  EXPECT_NE(runs[0].digest, RunBothRanks("all-synced", false)[0].digest);
}

// The last step writes a checkpoint, so a finished job can be continued; once only, also when the
// last step is a multiple of checkpoint.everySteps. Without a checkpoint root (the bench) none.
TEST(TrainLoop, TheLastStepWritesOneCheckpoint) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / absl::StrCat("train-loop-final-", ::getpid());
  fs::remove_all(root);
  const std::vector<RankRun> every5 =
      RunBothRanks("final-5", false, train::GradSync::kAllReduce, {"checkpoint.everySteps=5"}, (root / "a").string());
  EXPECT_EQ(every5[0].checkpoints, (std::vector<int64_t>{5, 10, 13}));
  EXPECT_EQ(every5[1].checkpoints, every5[0].checkpoints);
  const std::vector<RankRun> at_end =
      RunBothRanks("final-13", false, train::GradSync::kAllReduce, {"checkpoint.everySteps=13"}, (root / "b").string());
  EXPECT_EQ(at_end[0].checkpoints, (std::vector<int64_t>{13})) << "the last step, a multiple, writes once";
  EXPECT_TRUE(RunBothRanks("no-root", false)[0].checkpoints.empty());
  fs::remove_all(root);
}

// A cancelled job stops at a step boundary as after its last step. Only rank 0 is asked (its
// heartbeat came first); the per-step all-reduce makes both ranks stop after the same step, write
// the final checkpoint there, and finish with the same digest and rank 0's weights.
TEST(TrainLoop, AStopAskedOfOneRankEndsBothAfterTheSameStepWithTheFinalCheckpoint) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / absl::StrCat("train-loop-stop-", ::getpid());
  fs::remove_all(root);
  fs::remove(MlpAssignment(0).weights_path());
  testing::CoordinatorServer server;
  std::vector<RankRun> runs(2);
  std::vector<int64_t> steps(2);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      auto kv = server.Kv("stop");
      v1::Assignment a = MlpAssignment(rank);
      a.set_checkpoint_root(root.string());
      const train::TrainConfig config = ConfigOf(a);
      auto replica = train::CreateReplica(config, CpuWorker(kv.get()));
      ASSERT_TRUE(replica.ok()) << replica.status();
      std::atomic<bool> never{false};
      train::TrainHooks hooks;
      hooks.kv = kv.get();
      hooks.stop = rank == 0 ? &stop : &never;
      hooks.epoch_seed = [&](int epoch) -> absl::StatusOr<uint64_t> { return ddp::EpochSeed(config.seed, epoch); };
      // Asked while step 4 runs: the vote of step 4 carries it.
      hooks.on_step_begin = [&, rank](const train::StepMarker& m) {
        if (rank == 0 && m.step == 4) stop = true;
      };
      hooks.on_checkpoint = [&](const v1::ReportCheckpointRequest& r) { runs[rank].checkpoints.push_back(r.step()); };
      absl::StatusOr<train::TrainOutcome> outcome = Train(config, **replica, hooks);
      ASSERT_TRUE(outcome.ok()) << outcome.status();
      steps[rank] = outcome->result.global_step();
      runs[rank].digest = outcome->param_digest;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(steps, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(runs[0].checkpoints, (std::vector<int64_t>{4}));
  EXPECT_EQ(runs[1].checkpoints, (std::vector<int64_t>{4}));
  EXPECT_EQ(runs[0].digest, runs[1].digest);
  auto weights = ckpt::LoadWeights(MlpAssignment(0).weights_path());
  EXPECT_TRUE(weights.ok()) << weights.status();
  fs::remove_all(root);
}

// The coordinator resolved the data path inside its data root; by the time the worker reads it, it
// is a symlink to a file outside. The worker refuses it by name, without its contents; only a
// coordinator that sends no roots (one that predates them) leaves the check out.
TEST(TrainLoop, ReadsNoDataFileThatResolvesOutsideTheDataRoots) {
  namespace fs = std::filesystem;
  const fs::path base = fs::path(::testing::TempDir()) / absl::StrCat("train-loop-roots-", ::getpid());
  fs::remove_all(base);
  fs::create_directories(base / "data");
  fs::create_directories(base / "etc");
  const std::string secret = "root:$6$not-for-your-eyes\n";
  std::ofstream shadow(base / "etc" / "shadow");
  for (int i = 0; i < 100; ++i) shadow << secret;
  shadow.close();
  const std::string corpus = (base / "data" / "corpus.txt").string();
  fs::create_symlink(base / "etc" / "shadow", corpus);
  v1::Assignment a = TinyAssignment("cpu", "gloo", "fp32");
  a.mutable_spec()->mutable_data()->mutable_text()->set_paths(0, corpus);
  testing::CoordinatorServer server;
  auto kv = server.Kv("data-roots");
  const train::TrainConfig unchecked = ConfigOf(a);
  auto replica = train::CreateReplica(unchecked, CpuWorker(kv.get()));
  ASSERT_TRUE(replica.ok()) << replica.status();
  EXPECT_TRUE(train::TrainLoop::Start(unchecked, **replica, train::TrainHooks()).ok());

  a.add_data_roots((base / "data").string());
  const train::TrainConfig checked = ConfigOf(a);
  auto refused = train::TrainLoop::Start(checked, **replica, train::TrainHooks());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("data.text.paths[0]: \"" + corpus + "\" matches \"" + corpus +
                                   "\", which resolves outside the data root " + (base / "data").string()));
  EXPECT_THAT(std::string(refused.status().message()), ::testing::Not(::testing::HasSubstr("not-for-your-eyes")));
  fs::remove_all(base);
}

}  // namespace
}  // namespace gradsync::worker

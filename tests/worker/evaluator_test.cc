// The validation loss: the same at every world size up to the order of double additions, equal to
// a computation one window at a time, and evaluating leaves training bitwise unchanged.
#include "gradsync/train/evaluator.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gloo_ranks.h"
#include "gmock/gmock.h"
#include "gradsync/core/rng.h"
#include "gradsync/data/token_shard.h"
#include "gradsync/spec/job_spec.h"
#include "gradsync/train/train_loop.h"
#include "gtest/gtest.h"
#include "plans.h"
#include "replica_test_util.h"

namespace gradsync::worker {
namespace {

namespace fs = std::filesystem;

constexpr int kSeqLen = 16;

class EvaluatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat("evaluator-", ::getpid(), "-", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    // Uneven files: 300 tokens are 19 windows (the last of 14 targets), 97 are 6 (the last of 6).
    files_ = {Stream(300, 1), Stream(97, 2)};
    for (size_t f = 0; f < files_.size(); ++f) {
      ASSERT_TRUE(data::WriteShard(Path(absl::StrCat("val_", f, ".bin")), files_[f]).ok());
    }
    ASSERT_TRUE(data::WriteShard(Path("train_0.bin"), Stream(2000, 3)).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  static std::vector<uint16_t> Stream(int n, uint64_t seed) {
    Rng rng(seed);
    std::vector<uint16_t> out(n);
    for (auto& t : out) t = static_cast<uint16_t>(rng.Below(256));
    return out;
  }

  // A small gpt2 on the shards; `extra` YAML lines are added to the training section.
  v1::JobSpec Spec(int world, const std::vector<std::string>& overrides = {}) const {
    const std::string yaml = absl::StrCat(
        "model: {preset: gpt-tiny, device: cpu, transformer: {layers: 1, width: 32, heads: 2, mlpWidth: 64, seqLen: ",
        kSeqLen, "}}\ndata: {shards: {paths: [", Path("train_*.bin"), "]}, validation: {paths: [", Path("val_*.bin"),
        "]}}\ntraining: {worldSize: ", world, ", microBatch: 3, maxSteps: 5, evalEvery: 2, seed: 9}");
    absl::StatusOr<v1::JobSpec> spec = spec::Normalize(*spec::ParseJobSpec(yaml, "evaluator-test.yaml", overrides));
    EXPECT_TRUE(spec.ok()) << spec.status();
    return spec.value_or(v1::JobSpec());
  }

  fs::path dir_;
  std::vector<std::vector<uint16_t>> files_;
};

// The mean over every target position, each window scored alone straight from the files' tokens,
// with no padding: nothing of ValidationSet, the partition or the all-reduce.
double OneWindowAtATime(nn::Model& model, const std::vector<std::vector<uint16_t>>& files) {
  double sum = 0;
  int64_t count = 0;
  for (const auto& tokens : files) {
    for (size_t start = 0; start + 1 < tokens.size(); start += kSeqLen) {
      nn::Batch b;
      b.size = 1;
      for (size_t t = start; t < std::min(start + kSeqLen, tokens.size() - 1); ++t) {
        b.tokens.push_back(tokens[t]);
        b.targets.push_back(tokens[t + 1]);
      }
      absl::StatusOr<nn::LossSum> loss = model.Evaluate(b);
      EXPECT_TRUE(loss.ok()) << loss.status();
      sum += loss->sum;
      count += loss->count;
    }
  }
  EXPECT_EQ(count, 299 + 96) << "every token but each file's first is predicted once";
  return sum / static_cast<double>(count);
}

TEST_F(EvaluatorTest, TheSameLossAtEveryWorldSizeAndEqualToOneWindowAtATime) {
  const v1::JobSpec spec = Spec(1);
  std::unique_ptr<nn::Model> reference = *gradsync::testing::ModelOf(spec);
  reference->InitParams(9);
  const double want = OneWindowAtATime(*reference, files_);

  testing::CoordinatorServer server;
  std::map<int, double> by_world;
  for (int world = 1; world <= 5; ++world) {
    std::mutex mu;
    std::vector<double> losses(world);
    testing::RunRanks(server, absl::StrCat("eval-", world), world,
                      [&](int rank, comm::Communicator& comm, comm::KvClient&) {
                        train::TrainConfig config;
                        config.plan = *spec::PlanJob(spec);
                        config.rank = rank;
                        config.sampler.micro_batch = 3;
                        std::unique_ptr<nn::Model> model = *gradsync::testing::ModelOf(spec);
                        model->InitParams(9);
                        absl::StatusOr<std::unique_ptr<train::Evaluator>> e = train::Evaluator::Create(config, world);
                        ASSERT_TRUE(e.ok()) << e.status();
                        absl::StatusOr<train::Evaluation> got = (*e)->Evaluate(7, *model, comm);
                        ASSERT_TRUE(got.ok()) << got.status();
                        EXPECT_EQ(got->step, 7);
                        std::lock_guard<std::mutex> lock(mu);
                        losses[rank] = got->loss;
                      });
    for (int r = 1; r < world; ++r) EXPECT_EQ(losses[r], losses[0]) << "every rank holds the all-reduced mean";
    by_world[world] = losses[0];
  }
  for (const auto& [world, loss] : by_world) {
    // The batches and their double sums are the same at every world size (eval_partition.h); only
    // the order in which the ranks' sums of about 400 terms of size ~5.5 are added changes: a few
    // ulps of the sum, 1e-12 relative with room to spare.
    EXPECT_NEAR(loss, by_world[1], 1e-12 * by_world[1]) << "world size " << world;
    // One window at a time, the model's float arithmetic runs on other shapes: fp32 tolerance.
    EXPECT_NEAR(loss, want, 1e-5 * want) << "world size " << world;
  }
}

struct TrainRun {
  std::vector<double> train_losses;
  std::map<int64_t, double> validation;  // step -> loss, from the step reports
  std::string digest;
  v1::JobResult result;
  v1::JobProgress progress;  // rank 0's last
};

// Two ranks train `spec` to the end through train::TrainLoop; rank 0's figures.
TrainRun TrainTwoRanks(const v1::JobSpec& spec, const std::string& job) {
  testing::CoordinatorServer server;
  std::vector<TrainRun> runs(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      auto kv = server.Kv(job);
      v1::Assignment a = TinyAssignment("cpu", "gloo", "fp32", 2);
      *a.mutable_spec() = spec;
      a.set_rank(rank);
      a.set_weights_path(absl::StrCat(::testing::TempDir(), "/evaluator-test-", job, "-", ::getpid(), ".bin"));
      const train::TrainConfig config = ConfigOf(a);
      train::ReplicaOptions o;
      o.device.set_kind(v1::Device::CPU);
      o.kv = kv.get();
      auto replica = train::CreateReplica(config, o);
      ASSERT_TRUE(replica.ok()) << replica.status();
      TrainRun& run = runs[rank];
      train::TrainHooks hooks;
      hooks.kv = kv.get();
      hooks.epoch_seed = [&](int epoch) -> absl::StatusOr<uint64_t> { return ddp::EpochSeed(config.seed, epoch); };
      hooks.on_step = [&](const v1::StepReport& r) {
        run.train_losses.push_back(r.loss());
        if (r.has_validation_loss()) run.validation[r.step()] = r.validation_loss();
      };
      hooks.on_progress = [&](const v1::JobProgress& p) { run.progress = p; };
      absl::StatusOr<train::TrainOutcome> outcome = Train(config, **replica, hooks);
      ASSERT_TRUE(outcome.ok()) << outcome.status();
      run.digest = outcome->param_digest;
      run.result = outcome->result;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(runs[0].validation, runs[1].validation) << "both ranks report the all-reduced validation loss";
  return runs[0];
}

TEST_F(EvaluatorTest, EvaluatingLeavesTrainingBitwiseUnchanged) {
  const TrainRun with = TrainTwoRanks(Spec(2), "with-eval");
  const TrainRun without =
      TrainTwoRanks(Spec(2, {"data.validation.disabled=true", "data.validation.paths=[]"}), "no-eval");
  ASSERT_EQ(with.train_losses.size(), 5u);
  EXPECT_EQ(with.train_losses, without.train_losses) << "every step's training loss, bit for bit";
  EXPECT_EQ(with.digest, without.digest) << "the final parameters, bit for bit";

  // Every evalEvery (2) steps and after the last.
  EXPECT_THAT(with.validation, ::testing::ElementsAre(::testing::Key(2), ::testing::Key(4), ::testing::Key(5)));
  EXPECT_TRUE(without.validation.empty());
  ASSERT_TRUE(with.result.has_validation_loss());
  EXPECT_EQ(with.result.validation_loss(), with.validation.at(5));
  EXPECT_FALSE(without.result.has_validation_loss());
  EXPECT_EQ(with.progress.validation_step(), 5);
  EXPECT_EQ(with.progress.validation_loss(), with.validation.at(5));
}

TEST_F(EvaluatorTest, ZeroMeansAfterTheLastStepOnly) {
  const TrainRun at_end = TrainTwoRanks(Spec(2, {"training.evalEvery=0"}), "at-end");
  EXPECT_THAT(at_end.validation, ::testing::ElementsAre(::testing::Key(5)));
}

}  // namespace
}  // namespace gradsync::worker

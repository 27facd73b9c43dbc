// train::CreateReplica on a GPU (skipped without one): the CUDA replica over NCCL and over Gloo staged
// through host memory follows the CPU replica, its state survives a save and load exactly, and
// every ddp.sharding mode trains as unsharded training does.
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gloo_ranks.h"
#include "gradsync/device/device.h"
#include "gradsync/train/replica.h"
#include "gradsync/train/train_checkpoint.h"
#include "gtest/gtest.h"
#include "replica_test_util.h"

namespace gradsync::worker {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (device::ListGpus().empty()) GTEST_SKIP() << "no CUDA device visible: the GPU replica is not exercised"

train::ReplicaOptions Worker(comm::KvClient* kv, bool gpu) {
  train::ReplicaOptions o;
  o.device.set_kind(gpu ? v1::Device::CUDA : v1::Device::CPU);
  o.device.set_gpu_index(0);
  o.device.set_description(gpu ? "gpu (cuda:0)" : "cpu");
  o.kv = kv;
  return o;
}

struct StepResult {
  std::vector<double> losses, norms;  // every step's (0 where it failed)
  std::vector<float> params;
};

StepResult TrainSteps(train::Replica& r, int steps) {
  StepResult out;
  for (int s = 0; s < steps; ++s) {
    const nn::Batch batch = TinyBatch(4, s);
    r.ZeroGrads();
    auto loss = r.model().ForwardBackward(batch, 1.0f / static_cast<float>(batch.tokens.size()), {});
    EXPECT_TRUE(loss.ok()) << loss.status();
    out.losses.push_back(loss.ok() ? loss->sum / static_cast<double>(loss->count) : 0.0);
    auto norm = r.Step(1e-3, 1.0);
    EXPECT_TRUE(norm.ok()) << norm.status();
    out.norms.push_back(norm.ok() ? *norm : 0.0);
  }
  auto params = r.HostParams();
  EXPECT_TRUE(params.ok()) << params.status();
  if (params.ok()) out.params = *std::move(params);
  return out;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b, const std::vector<bool>& skip = {}) {
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (i < skip.size() && skip[i]) continue;
    m = std::max(m, std::abs(double{a[i]} - double{b[i]}));
  }
  return a.size() == b.size() ? m : 1e30;
}

// The key biases of `layout`: their gradient is zero in exact arithmetic and rounding noise in
// fp32, which AdamW turns into steps of +-lr whose signs differ between the CPU and the GPU.
std::vector<bool> KeyBiases(const nn::ParamLayout& layout, int64_t width) {
  std::vector<bool> skip(layout.total_numel(), false);
  for (int p = 0; p < layout.size(); ++p) {
    const nn::ParamInfo& info = layout.param(p);
    if (info.name.size() < 13 || info.name.compare(info.name.size() - 13, 13, "attn.qkv.bias") != 0) continue;
    for (int64_t i = width; i < 2 * width; ++i) skip[info.offset + i] = true;
  }
  return skip;
}

TEST(GpuReplica, Fp32OverNcclFollowsTheCpuReplica) {
  SKIP_WITHOUT_GPU();
  testing::CoordinatorServer server;
  auto kv_cpu = server.Kv("cpu"), kv_gpu = server.Kv("gpu");
  auto cpu = train::CreateReplica(ConfigOf(TinyAssignment("cpu", "gloo", "fp32")), Worker(kv_cpu.get(), false));
  auto gpu = train::CreateReplica(ConfigOf(TinyAssignment("cuda", "nccl", "fp32")), Worker(kv_gpu.get(), true));
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ((*gpu)->comm().backend(), "nccl");
  EXPECT_TRUE((*gpu)->model().on_device());
  (*cpu)->model().InitParams(5);
  (*gpu)->model().InitParams(5);
  const StepResult c = TrainSteps(**cpu, 5), g = TrainSteps(**gpu, 5);
  EXPECT_NEAR(g.losses.back(), c.losses.back(), 1e-3 * c.losses.back());
  EXPECT_NEAR(g.norms.back(), c.norms.back(), 1e-3 * c.norms.back());
  const int64_t width = TinyAssignment("cpu", "gloo", "fp32").spec().model().transformer().width();
  EXPECT_LT(MaxAbsDiff(g.params, c.params, KeyBiases((*cpu)->model().layout(), width)), 1e-4);
}

TEST(GpuReplica, Bf16TrainsCloseToFp32) {
  SKIP_WITHOUT_GPU();
  testing::CoordinatorServer server;
  auto kv32 = server.Kv("fp32"), kv16 = server.Kv("bf16");
  auto fp32 = train::CreateReplica(ConfigOf(TinyAssignment("cuda", "nccl", "fp32")), Worker(kv32.get(), true));
  ASSERT_TRUE(fp32.ok()) << fp32.status();
  (*fp32)->model().InitParams(5);
  const StepResult a = TrainSteps(**fp32, 5);
  fp32->reset();  // NCCL: one communicator per GPU at a time
  auto bf16 = train::CreateReplica(ConfigOf(TinyAssignment("cuda", "nccl", "bf16")), Worker(kv16.get(), true));
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  (*bf16)->model().InitParams(5);
  const StepResult b = TrainSteps(**bf16, 5);
  ASSERT_EQ(b.losses.size(), 5u);
  ASSERT_EQ(a.losses.size(), 5u);
  // The first step sees the same weights: its loss within 0.5%, its gradient norm within 5%.
  EXPECT_NEAR(b.losses[0], a.losses[0], 0.005 * a.losses[0]);
  EXPECT_NEAR(b.norms[0], a.norms[0], 0.05 * a.norms[0]);
  // Adam's first steps move every weight by about lr, in the direction of its gradient's sign,
  // however small the gradient: where bf16 rounding flips a tiny gradient's sign the weight moves
  // the other way, so the runs part faster than the rounding alone would suggest (measured on an
  // H100: 2.4% apart after five steps). bf16 must still learn: at least half of fp32's drop in
  // loss, and end within 5% of it.
  EXPECT_LT(b.losses[4], b.losses[0] - 0.5 * (a.losses[0] - a.losses[4]));
  EXPECT_NEAR(b.losses[4], a.losses[4], 0.05 * a.losses[4]);
}

TEST(GpuReplica, SavedStateLoadsAndContinuesBitwise) {
  SKIP_WITHOUT_GPU();
  testing::CoordinatorServer server;
  auto kv1 = server.Kv("save"), kv2 = server.Kv("load");
  // Gloo staged: two replicas on the one GPU at once.
  auto first = train::CreateReplica(ConfigOf(TinyAssignment("cuda", "gloo", "bf16")), Worker(kv1.get(), true));
  auto second = train::CreateReplica(ConfigOf(TinyAssignment("cuda", "gloo", "bf16")), Worker(kv2.get(), true));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  (*first)->model().InitParams(5);
  (*second)->model().InitParams(77);
  TrainSteps(**first, 3);
  ckpt::RankState state;
  const auto total = static_cast<int64_t>((*first)->model().params().size());
  ASSERT_TRUE((*first)->SaveState(0, total, &state).ok());
  EXPECT_EQ(state.adam_step, 3);
  ASSERT_TRUE((*second)->LoadState(state).ok());
  const StepResult a = TrainSteps(**first, 2), b = TrainSteps(**second, 2);
  EXPECT_TRUE(a.params == b.params) << "max difference " << MaxAbsDiff(a.params, b.params);
}

// Two ranks sharing the GPU through staged Gloo, assigned `a` (world size 2): each rank's
// parameters after 3 steps on its own data, the gradients all-reduced and clipped to `max_norm`,
// and its replica's memory account.
struct TwoRanks {
  std::vector<std::vector<float>> params;
  std::vector<int64_t> optimizer_bytes;
};

TwoRanks TrainTwoRanksOnTheGpu(const v1::Assignment& a, double max_norm) {
  testing::CoordinatorServer server;
  const std::string sharding = a.spec().ddp().sharding();
  const bool sharded = sharding != "none";
  TwoRanks run{std::vector<std::vector<float>>(2), std::vector<int64_t>(2)};
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      auto kv = server.Kv("shared-gpu");
      v1::Assignment mine = a;
      mine.set_rank(rank);
      auto r = train::CreateReplica(ConfigOf(mine), Worker(kv.get(), true));
      ASSERT_TRUE(r.ok()) << r.status();
      (*r)->InitParams(5);
      for (int s = 0; s < 3; ++s) {
        const nn::Batch batch = TinyBatch(2, 10 * rank + s);  // each rank its own data
        (*r)->ZeroGrads();
        ASSERT_TRUE((*r)->model().ForwardBackward(batch, 1.0f / (2.0f * batch.tokens.size()), {}).ok());
        // As the reducer does: "gradients" leaves each rank the sums of its own shard alone.
        const std::span<float> grads = (*r)->model().grads();
        ASSERT_TRUE(
            (sharding == "gradients" || sharding == "full"
                 ? (*r)->comm().ReduceScatterBlocks(grads, comm::EvenBounds(static_cast<int64_t>(grads.size()), 2))
                 : (*r)->comm().AllReduce(grads, comm::ReduceOp::kSum))
                ->Wait()
                .ok());
        ASSERT_TRUE((*r)->Step(1e-3, max_norm).ok());
      }
      run.params[rank] = *(*r)->HostParams();
      run.optimizer_bytes[rank] = (*r)->Memory().optimizer;
      if (sharded) {
        // A checkpoint shard outside the moments this rank holds is refused.
        ckpt::RankState state;
        const int64_t total = (*r)->model().layout().total_numel();
        EXPECT_EQ((*r)->SaveState(0, total, &state).code(), absl::StatusCode::kInvalidArgument);
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  return run;
}

v1::Assignment ShardedOnTwoRanks(const std::string& sharding) {
  v1::Assignment a = TinyAssignment("cuda", "gloo", "fp32", 2);
  a.mutable_spec()->mutable_ddp()->set_sharding(sharding);
  return a;
}

TEST(GpuReplica, TwoRanksShareTheGpuThroughStagedGlooAndStayIdentical) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::vector<float>> params =
      TrainTwoRanksOnTheGpu(TinyAssignment("cuda", "gloo", "bf16", 2), 1.0).params;
  EXPECT_FALSE(params[0].empty());
  EXPECT_TRUE(params[0] == params[1]) << "replicas diverged: " << MaxAbsDiff(params[0], params[1]);
}

// ddp.sharding "optimizer" on GPU ranks: AdamW is elementwise, so each rank stepping its half and
// the halves all-gathered give the very parameters every rank stepping all of them gives.
TEST(GpuReplica, ShardedOptimizerOnTwoRanksSharingTheGpuTrainsBitwiseLikeUnsharded) {
  SKIP_WITHOUT_GPU();
  const TwoRanks none = TrainTwoRanksOnTheGpu(ShardedOnTwoRanks("none"), 0.5);
  const TwoRanks sharded = TrainTwoRanksOnTheGpu(ShardedOnTwoRanks("optimizer"), 0.5);
  ASSERT_FALSE(none.params[0].empty());
  ASSERT_EQ(sharded.params[0].size(), none.params[0].size());
  EXPECT_TRUE(sharded.params[0] == sharded.params[1])
      << "replicas diverged: " << MaxAbsDiff(sharded.params[0], sharded.params[1]);
  EXPECT_TRUE(sharded.params[0] == none.params[0])
      << "sharded differs from unsharded by up to " << MaxAbsDiff(sharded.params[0], none.params[0]);
  const auto total = static_cast<int64_t>(none.params[0].size());
  for (int rank = 0; rank < 2; ++rank) {
    const auto [begin, end] = comm::BlockRange(total, 2, rank);
    EXPECT_EQ(sharded.optimizer_bytes[rank], 2 * 4 * (end - begin)) << "rank " << rank;
    EXPECT_EQ(none.optimizer_bytes[rank], 2 * 4 * total) << "rank " << rank;
  }
}

// One rank over NCCL: its shard is every parameter, and the all-gather after the step is NCCL's.
TEST(GpuReplica, ShardedOptimizerOverNcclTrainsLikeUnsharded) {
  SKIP_WITHOUT_GPU();
  testing::CoordinatorServer server;
  std::vector<std::vector<float>> params;
  for (const char* sharding : {"none", "optimizer"}) {
    auto kv = server.Kv(std::string("nccl-") + sharding);
    v1::Assignment a = TinyAssignment("cuda", "nccl", "bf16");
    a.mutable_spec()->mutable_ddp()->set_sharding(sharding);
    auto r = train::CreateReplica(ConfigOf(a), Worker(kv.get(), true));
    ASSERT_TRUE(r.ok()) << r.status();
    (*r)->model().InitParams(5);
    params.push_back(TrainSteps(**r, 3).params);
  }
  ASSERT_FALSE(params[0].empty());
  EXPECT_TRUE(params[0] == params[1]) << "differs by up to " << MaxAbsDiff(params[0], params[1]);
}

// ddp.sharding "gradients" on GPU ranks: each bucket reduce-scattered (here the whole buffer at
// once, over staged Gloo, whose reduce-scatter sums as its all-reduce does), the clip's norm from
// the two shards' sums. Without clipping the factor is exactly 1 and AdamW elementwise, so the
// parameters are those of unsharded training bit for bit. With clipping the norm's square is two
// fp32 partial sums added instead of one pass over all, a relative difference of a few fp32 ulps,
// which moves AdamW's updates far less than the CPU/GPU comparison's 1e-4 allows.
TEST(GpuReplica, ShardedGradientsOnTwoRanksSharingTheGpuTrainLikeUnsharded) {
  SKIP_WITHOUT_GPU();
  for (const double max_norm : {0.0, 0.5}) {
    SCOPED_TRACE(max_norm > 0 ? "clipped" : "unclipped");
    const TwoRanks none = TrainTwoRanksOnTheGpu(ShardedOnTwoRanks("none"), max_norm);
    const TwoRanks sharded = TrainTwoRanksOnTheGpu(ShardedOnTwoRanks("gradients"), max_norm);
    ASSERT_FALSE(none.params[0].empty());
    ASSERT_EQ(sharded.params[0].size(), none.params[0].size());
    EXPECT_TRUE(sharded.params[0] == sharded.params[1])
        << "replicas diverged: " << MaxAbsDiff(sharded.params[0], sharded.params[1]);
    if (max_norm == 0.0) {
      EXPECT_TRUE(sharded.params[0] == none.params[0])
          << "sharded differs from unsharded by up to " << MaxAbsDiff(sharded.params[0], none.params[0]);
    } else {
      const std::unique_ptr<nn::Model> model =
          nn::CreateModel(ConfigOf(TinyAssignment("cpu", "gloo", "fp32")).plan.model, nn::ModelInit::kNone);
      const nn::ParamLayout& layout = model->layout();
      const int64_t width = TinyAssignment("cpu", "gloo", "fp32").spec().model().transformer().width();
      EXPECT_LT(MaxAbsDiff(sharded.params[0], none.params[0], KeyBiases(layout, width)), 1e-4);
    }
    const auto total = static_cast<int64_t>(none.params[0].size());
    for (int rank = 0; rank < 2; ++rank) {
      const auto [begin, end] = comm::BlockRange(total, 2, rank);
      EXPECT_EQ(sharded.optimizer_bytes[rank], 2 * 4 * (end - begin)) << "rank " << rank;
    }
  }
}

// One rank over NCCL: its shard is every gradient, the reduce-scatter is NCCL's grouped reduce and
// the norm's all-reduce a single rank's, so the step is unsharded training's exactly.
TEST(GpuReplica, ShardedGradientsOverNcclTrainLikeUnsharded) {
  SKIP_WITHOUT_GPU();
  testing::CoordinatorServer server;
  std::vector<std::vector<float>> params;
  std::vector<std::vector<double>> norms;
  for (const char* sharding : {"none", "gradients"}) {
    auto kv = server.Kv(std::string("nccl-") + sharding);
    v1::Assignment a = TinyAssignment("cuda", "nccl", "bf16");
    a.mutable_spec()->mutable_ddp()->set_sharding(sharding);
    auto r = train::CreateReplica(ConfigOf(a), Worker(kv.get(), true));
    ASSERT_TRUE(r.ok()) << r.status();
    if (std::string(sharding) == "gradients") {
      EXPECT_NE((*r)->Describe().find("sharding gradients"), std::string::npos) << (*r)->Describe();
    }
    (*r)->model().InitParams(5);
    const StepResult result = TrainSteps(**r, 3);
    params.push_back(result.params);
    norms.push_back(result.norms);
  }
  ASSERT_FALSE(params[0].empty());
  EXPECT_TRUE(params[0] == params[1]) << "differs by up to " << MaxAbsDiff(params[0], params[1]);
  EXPECT_EQ(norms[0], norms[1]);
}

// ddp.sharding "full" on two ranks sharing the GPU (staged Gloo): the model gathers each unit's
// parameters from the two shards before it computes and gives the rest back after, no all-gather
// follows the step, and the gathered-whole parameters at the end are those of "gradients" (the
// same reduce-scatter, clip and AdamW over the shard; only where the parameters live differs)
// bit for bit. Each rank holds its shard of the moments and, between passes, of the parameters
// plus at most the units it had gathered.
TEST(GpuReplica, FullyShardedOnTwoRanksSharingTheGpuTrainsBitwiseLikeShardedGradients) {
  SKIP_WITHOUT_GPU();
  for (const char* precision : {"fp32", "bf16"}) {
    SCOPED_TRACE(precision);
    auto on_two_ranks = [&](const std::string& sharding) {
      v1::Assignment a = TinyAssignment("cuda", "gloo", precision, 2);
      a.mutable_spec()->mutable_ddp()->set_sharding(sharding);
      return TrainTwoRanksOnTheGpu(a, 0.5);
    };
    const TwoRanks gradients = on_two_ranks("gradients");
    const TwoRanks full = on_two_ranks("full");
    ASSERT_FALSE(gradients.params[0].empty());
    ASSERT_EQ(full.params[0].size(), gradients.params[0].size());
    EXPECT_TRUE(full.params[0] == full.params[1]) << "ranks differ: " << MaxAbsDiff(full.params[0], full.params[1]);
    EXPECT_TRUE(full.params[0] == gradients.params[0])
        << "full differs from gradients by up to " << MaxAbsDiff(full.params[0], gradients.params[0]);
    const auto total = static_cast<int64_t>(full.params[0].size());
    for (int rank = 0; rank < 2; ++rank) {
      const auto [begin, end] = comm::BlockRange(total, 2, rank);
      EXPECT_EQ(full.optimizer_bytes[rank], 2 * 4 * (end - begin)) << "rank " << rank;
    }
  }
}

// Every sharded mode on GPU ranks resumes at another world size from its range of the checkpoint
// alone (train::RestoreCheckpoint): two ranks sharing the GPU train and write their shards, three fresh
// ranks on the same GPU load them, and each then holds the trained parameters (gathered, where the
// mode keeps them whole) and exactly its range of the moments.
TEST(GpuReplica, ShardedRanksResumeAnotherWorldSizesCheckpointFromTheirRanges) {
  SKIP_WITHOUT_GPU();
  for (const char* sharding : {"optimizer", "gradients", "full"}) {
    SCOPED_TRACE(sharding);
    testing::CoordinatorServer server;
    const std::string dir = ::testing::TempDir() + "/gpu-resume-" + sharding;
    std::filesystem::remove_all(dir);
    auto run_ranks = [&](int world, const std::string& ns, const std::function<void(int, train::Replica&)>& body) {
      std::vector<std::thread> ranks;
      for (int rank = 0; rank < world; ++rank) {
        ranks.emplace_back([&, rank] {
          auto kv = server.Kv(ns);
          v1::Assignment a = TinyAssignment("cuda", "gloo", "fp32", world);
          a.mutable_spec()->mutable_ddp()->set_sharding(sharding);
          a.set_rank(rank);
          auto r = train::CreateReplica(ConfigOf(a), Worker(kv.get(), true));
          ASSERT_TRUE(r.ok()) << r.status();
          body(rank, **r);
        });
      }
      for (std::thread& t : ranks) t.join();
    };
    v1::CheckpointManifest m;
    m.set_dir(dir);
    m.set_step(2);
    m.set_world_size(2);
    std::vector<v1::CheckpointPart> parts(2);
    std::vector<float> trained;
    run_ranks(2, "train", [&](int rank, train::Replica& r) {
      r.InitParams(5);
      for (int s = 0; s < 2; ++s) {
        r.ZeroGrads();
        ASSERT_TRUE(r.model().ForwardBackward(TinyBatch(2, s), 1.0f / 256, {}).ok());
        const std::span<float> grads = r.model().grads();
        ASSERT_TRUE(
            r.comm().ReduceScatterBlocks(grads, comm::EvenBounds(static_cast<int64_t>(grads.size()), 2))->Wait().ok());
        ASSERT_TRUE(r.Step(1e-3, 0.5).ok());
      }
      const auto [begin, end] = r.StateRange();
      ckpt::RankState state;
      state.layout = r.model().layout();
      ASSERT_TRUE(r.SaveState(begin, end, &state).ok());
      state.rank = rank;
      state.world_size = 2;
      auto part = ckpt::WriteRankPart(dir, state);
      ASSERT_TRUE(part.ok()) << part.status();
      parts[rank] = *part;
      auto params = r.HostParams();
      ASSERT_TRUE(params.ok()) << params.status();
      if (rank == 0) trained = *params;
    });
    for (const auto& p : parts) *m.add_parts() = p;
    absl::StatusOr<ckpt::RankState> whole = ckpt::ReadCheckpointState(m, 0);
    ASSERT_TRUE(whole.ok()) << whole.status();
    run_ranks(3, "resume", [&](int rank, train::Replica& r) {
      auto at = train::RestoreCheckpoint(m, rank, r);
      ASSERT_TRUE(at.ok()) << at.status();
      const auto [begin, end] = r.StateRange();
      EXPECT_EQ(std::make_pair(begin, end), comm::BlockRange(static_cast<int64_t>(trained.size()), 3, rank));
      ckpt::RankState mine;
      ASSERT_TRUE(r.SaveState(begin, end, &mine).ok());
      EXPECT_TRUE(mine.adam_m == std::vector<float>(whole->adam_m.begin() + begin, whole->adam_m.begin() + end));
      EXPECT_TRUE(mine.params == std::vector<float>(trained.begin() + begin, trained.begin() + end));
      auto params = r.HostParams();
      ASSERT_TRUE(params.ok()) << params.status();
      EXPECT_TRUE(*params == trained) << "rank " << rank;
    });
  }
}

// One rank over NCCL: a single rank owns every parameter, so the gate gathers nothing, and the
// step is unsharded training's exactly.
TEST(GpuReplica, FullyShardedOverNcclTrainsLikeUnsharded) {
  SKIP_WITHOUT_GPU();
  testing::CoordinatorServer server;
  std::vector<std::vector<float>> params;
  for (const char* sharding : {"none", "full"}) {
    auto kv = server.Kv(std::string("nccl-") + sharding);
    v1::Assignment a = TinyAssignment("cuda", "nccl", "bf16");
    a.mutable_spec()->mutable_ddp()->set_sharding(sharding);
    auto r = train::CreateReplica(ConfigOf(a), Worker(kv.get(), true));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->params_sharded(), std::string(sharding) == "full");
    (*r)->InitParams(5);
    params.push_back(TrainSteps(**r, 3).params);
  }
  ASSERT_FALSE(params[0].empty());
  EXPECT_TRUE(params[0] == params[1]) << "differs by up to " << MaxAbsDiff(params[0], params[1]);
}

}  // namespace
}  // namespace gradsync::worker

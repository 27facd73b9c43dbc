// train::CreateReplica on the CPU: a rank's model, optimizer and communicator behind the training loop's one
// interface; its optimizer state survives a save and load exactly; GPU placements a worker cannot
// run are refused by name.
#include "gradsync/train/replica.h"

#include <thread>

#include "gloo_ranks.h"
#include "gmock/gmock.h"
#include "gradsync/nn/optimizer.h"
#include "gtest/gtest.h"
#include "plans.h"
#include "replica_test_util.h"

namespace gradsync::worker {
namespace {

using ::testing::HasSubstr;

train::ReplicaOptions CpuWorker(comm::KvClient* kv) {
  train::ReplicaOptions o;
  o.device.set_kind(v1::Device::CPU);
  o.device.set_description("cpu (2 threads)");
  o.kv = kv;
  return o;
}

// One step: forward and backward on `batch`, then the replica's clip and AdamW.
double TrainStep(train::Replica& r, const nn::Batch& batch) {
  r.model().ZeroGrads();
  auto loss = r.model().ForwardBackward(batch, 1.0f / static_cast<float>(batch.tokens.size()), {});
  EXPECT_TRUE(loss.ok()) << loss.status();
  auto norm = r.Step(1e-3, 0.5);
  EXPECT_TRUE(norm.ok()) << norm.status();
  return norm.ok() ? *norm : -1;
}

TEST(Replica, TheCpuReplicaClipsAndStepsLikeTheHostOptimizer) {
  testing::CoordinatorServer server;
  auto kv = server.Kv("cpu-step");
  const v1::Assignment a = TinyAssignment("cpu", "gloo", "fp32");
  auto replica = train::CreateReplica(ConfigOf(a), CpuWorker(kv.get()));
  ASSERT_TRUE(replica.ok()) << replica.status();
  train::Replica& r = **replica;
  EXPECT_EQ(r.Describe(), "cpu, fp32, gloo");
  EXPECT_EQ(r.comm().size(), 1);
  r.model().InitParams(5);

  // The same step by hand, on a model of its own.
  auto reference = gradsync::testing::ModelOf(a.spec());
  ASSERT_TRUE(reference.ok());
  (*reference)->InitParams(5);
  const v1::TrainingSpec& t = a.spec().training();
  nn::AdamW adamw((*reference)->layout(), {t.beta1(), t.beta2(), t.eps(), t.weight_decay()});
  const nn::Batch batch = TinyBatch(2, 1);
  (*reference)->ZeroGrads();
  ASSERT_TRUE((*reference)->ForwardBackward(batch, 1.0f / static_cast<float>(batch.tokens.size()), {}).ok());
  const double want_norm = nn::ClipGlobalNorm((*reference)->grads(), 0.5);
  adamw.Step((*reference)->params(), (*reference)->grads(), 1e-3);

  EXPECT_EQ(TrainStep(r, batch), want_norm);
  EXPECT_GT(want_norm, 0.5) << "the test must clip";
  auto params = r.HostParams();
  ASSERT_TRUE(params.ok());
  const std::span<const float> want = (*reference)->params();
  EXPECT_TRUE(std::equal(params->begin(), params->end(), want.begin(), want.end()));
}

TEST(Replica, SavedStateLoadsIntoAFreshReplicaAndContinuesBitwise) {
  testing::CoordinatorServer server;
  auto kv1 = server.Kv("save"), kv2 = server.Kv("load");
  const v1::Assignment a = TinyAssignment("cpu", "gloo", "fp32");
  auto first = train::CreateReplica(ConfigOf(a), CpuWorker(kv1.get()));
  auto second = train::CreateReplica(ConfigOf(a), CpuWorker(kv2.get()));
  ASSERT_TRUE(first.ok() && second.ok());
  (*first)->model().InitParams(5);
  (*second)->model().InitParams(99);  // different on purpose: LoadState must replace everything
  for (int s = 0; s < 3; ++s) TrainStep(**first, TinyBatch(2, s));

  ckpt::RankState state;
  const auto total = static_cast<int64_t>((*first)->model().params().size());
  ASSERT_TRUE((*first)->SaveState(0, total, &state).ok());
  EXPECT_EQ(state.adam_step, 3);
  EXPECT_EQ(state.adam_m.size(), state.params.size());
  ASSERT_TRUE((*second)->LoadState(state).ok());

  TrainStep(**first, TinyBatch(2, 7));
  TrainStep(**second, TinyBatch(2, 7));
  auto p1 = (*first)->HostParams(), p2 = (*second)->HostParams();
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_TRUE(*p1 == *p2) << "a loaded replica must continue exactly as the saved one";
}

TEST(Replica, PlacementsTheWorkerCannotRunAreRefusedByName) {
  testing::CoordinatorServer server;
  auto kv = server.Kv("refused");
  auto gpu = train::CreateReplica(ConfigOf(TinyAssignment("cuda", "gloo", "bf16")), CpuWorker(kv.get()));
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(gpu.status().message(), HasSubstr("placement: rank 0 is placed on a GPU and this worker"));

  auto nccl = train::CreateReplica(ConfigOf(TinyAssignment("cpu", "nccl", "fp32")), CpuWorker(kv.get()));
  EXPECT_EQ(nccl.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(nccl.status().message(), HasSubstr("placement: nccl reduces GPU memory"));
}

TEST(Replica, TwoCpuRanksRendezvousThroughTheCoordinatorsStore) {
  testing::CoordinatorServer server;
  const v1::Assignment a = TinyAssignment("cpu", "gloo", "fp32", 2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      auto kv = server.Kv("two-ranks");
      v1::Assignment mine = a;
      mine.set_rank(rank);
      auto r = train::CreateReplica(ConfigOf(mine), CpuWorker(kv.get()));
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ((*r)->comm().rank(), rank);
      std::vector<double> one = {1.0};
      ASSERT_TRUE((*r)->comm().AllReduceSum(std::span<double>(one)).ok());
      EXPECT_EQ(one[0], 2.0);
    });
  }
  for (std::thread& t : ranks) t.join();
}

}  // namespace
}  // namespace gradsync::worker

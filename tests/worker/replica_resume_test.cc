// A sharded job resumes at another world size from its range of the checkpoint alone
// (train::RestoreCheckpoint: ckpt::ReadCheckpointRange, train::Replica::LoadState): for every ddp.sharding mode,
// two CPU ranks train, write their shards as a checkpoint, and three fresh ranks load it, each
// reading only the elements it keeps. The three must then hold, bit for bit, the parameters and
// optimizer state the two left, the whole parameters gathered where the mode keeps them whole.
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gloo_ranks.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/train/replica.h"
#include "gradsync/train/train_checkpoint.h"
#include "gtest/gtest.h"
#include "replica_test_util.h"

namespace gradsync::worker {
namespace {

train::ReplicaOptions CpuWorker(comm::KvClient* kv) {
  train::ReplicaOptions o;
  o.device.set_kind(v1::Device::CPU);
  o.kv = kv;
  return o;
}

train::TrainConfig ShardedConfig(spec::Sharding sharding, int world, int rank) {
  v1::Assignment a = TinyAssignment("cpu", "gloo", "fp32", world);
  a.set_rank(rank);
  train::TrainConfig c = ConfigOf(a);
  c.plan.sharding = sharding;
  return c;
}

// Runs `body(rank, replica)` on `world` ranks at once, each with its replica.
template <typename Body>
void OnRanks(testing::CoordinatorServer& server, const std::string& ns, spec::Sharding sharding, int world, Body body) {
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < world; ++rank) {
    ranks.emplace_back([&, rank] {
      auto kv = server.Kv(ns);
      auto r = train::CreateReplica(ShardedConfig(sharding, world, rank), CpuWorker(kv.get()));
      ASSERT_TRUE(r.ok()) << r.status();
      body(rank, **r);
    });
  }
  for (std::thread& t : ranks) t.join();
}

class ReplicaResume : public ::testing::TestWithParam<spec::Sharding> {};

INSTANTIATE_TEST_SUITE_P(Modes, ReplicaResume,
                         ::testing::Values(spec::Sharding::kNone, spec::Sharding::kOptimizer,
                                           spec::Sharding::kGradients, spec::Sharding::kFull),
                         [](const auto& info) { return std::string(spec::Name(info.param)); });

TEST_P(ReplicaResume, ThreeRanksResumeTwoRanksShardsFromTheirRangesAlone) {
  const spec::Sharding sharding = GetParam();
  testing::CoordinatorServer server;
  const std::string dir = ::testing::TempDir() + "/replica-resume-" + std::string(spec::Name(sharding));
  std::filesystem::remove_all(dir);

  // Two ranks train three steps on the same batches and write their shards.
  v1::CheckpointManifest m;
  m.set_dir(dir);
  m.set_step(3);
  m.set_world_size(2);
  std::vector<v1::CheckpointPart> parts(2);
  std::vector<float> trained;
  OnRanks(server, "train", sharding, 2, [&](int rank, train::Replica& r) {
    r.InitParams(5);
    for (int s = 0; s < 3; ++s) {
      r.ZeroGrads();
      auto loss = r.model().ForwardBackward(TinyBatch(2, s), 1.0f / 256, {});
      ASSERT_TRUE(loss.ok()) << loss.status();
      ASSERT_TRUE(r.Step(1e-3, 0.5).ok());
    }
    const int64_t total = r.model().layout().total_numel();
    const auto [begin, end] = comm::BlockRange(total, 2, rank);
    ckpt::RankState state;
    state.model = ShardedConfig(sharding, 2, rank).model_spec;
    state.layout = r.model().layout();
    ASSERT_TRUE(r.SaveState(begin, end, &state).ok());
    state.rank = rank;
    state.world_size = 2;
    auto part = ckpt::WriteRankPart(dir, state);
    ASSERT_TRUE(part.ok()) << part.status();
    parts[rank] = *part;
    auto params = r.HostParams();  // a collective with sharded parameters
    ASSERT_TRUE(params.ok()) << params.status();
    if (rank == 0) trained = *params;
  });
  for (const auto& p : parts) *m.add_parts() = p;
  absl::StatusOr<ckpt::RankState> whole = ckpt::ReadCheckpointState(m, 0);
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_EQ(whole->params, trained);

  OnRanks(server, "resume", sharding, 3, [&](int rank, train::Replica& r) {
    r.InitParams(99);  // different on purpose: the load must replace every value this rank keeps
    const auto [begin, end] = r.StateRange();
    if (sharding == spec::Sharding::kNone) {
      EXPECT_EQ(end - begin, r.model().layout().total_numel()) << "unsharded, a rank keeps the whole state";
    } else {
      EXPECT_EQ(std::make_pair(begin, end), comm::BlockRange(r.model().layout().total_numel(), 3, rank));
    }
    auto at = train::RestoreCheckpoint(m, rank, r);
    ASSERT_TRUE(at.ok()) << at.status();
    EXPECT_EQ(at->step, 3);

    ckpt::RankState mine;
    ASSERT_TRUE(r.SaveState(begin, end, &mine).ok());
    const auto cut = [&](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + begin, v.begin() + end);
    };
    EXPECT_EQ(mine.params, cut(whole->params)) << "rank " << rank;
    EXPECT_EQ(mine.adam_m, cut(whole->adam_m)) << "rank " << rank;
    EXPECT_EQ(mine.adam_v, cut(whole->adam_v)) << "rank " << rank;
    EXPECT_EQ(mine.adam_step, 3);
    if (!r.params_sharded()) {
      // The parameters the range left out came from the other ranks.
      EXPECT_TRUE(std::equal(r.model().params().begin(), r.model().params().end(), trained.begin()))
          << "rank " << rank << " holds the whole trained parameters";
    }
    auto params = r.HostParams();
    ASSERT_TRUE(params.ok()) << params.status();
    EXPECT_EQ(*params, trained) << "rank " << rank;
  });
}

TEST(ReplicaResumeRefusal, AStateNotCoveringTheRanksRangeChangesNothing) {
  testing::CoordinatorServer server;
  OnRanks(server, "refuse", spec::Sharding::kOptimizer, 2, [&](int rank, train::Replica& r) {
    r.InitParams(5);
    const std::vector<float> before(r.model().params().begin(), r.model().params().end());
    const auto [begin, end] = r.StateRange();
    ckpt::RankState other;
    ASSERT_TRUE(r.SaveState(begin, end, &other).ok());
    other.shard_begin = begin + 1;  // one element short of this rank's range
    const absl::Status s = r.LoadState(other);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(absl::StrCat("does not cover this rank's [", begin, ", ", end, ")")), std::string::npos)
        << s;
    EXPECT_TRUE(std::equal(before.begin(), before.end(), r.model().params().begin())) << "rank " << rank;
  });
}

}  // namespace
}  // namespace gradsync::worker

#include "gradsync/ddp/sampler.h"

#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace gradsync::ddp {
namespace {

// An epoch's order as a table: its samples at positions 0 .. n-1.
std::vector<int64_t> EpochPermutation(uint64_t epoch_seed, int64_t n) {
  const EpochOrder order(epoch_seed, n);
  std::vector<int64_t> table(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) table[static_cast<size_t>(p)] = order[p];
  return table;
}

// Counts how often each sample is visited by all ranks over one epoch.
std::map<int64_t, int> VisitEpoch(const ShardConfig& config, uint64_t seed, int epoch) {
  const EpochOrder perm(EpochSeed(seed, epoch), config.num_samples);
  std::map<int64_t, int> visits;
  for (int64_t step = 0; step < config.steps_per_epoch(); ++step) {
    int64_t seen = 0;
    for (int r = 0; r < config.world_size; ++r) {
      const StepShard shard = ShardForStep(config, perm, step * config.global_batch(), r);
      for (const auto& micro : shard.micro_indices) {
        EXPECT_LE(static_cast<int64_t>(micro.size()), config.micro_batch);
        for (int64_t i : micro) ++visits[i];
        seen += static_cast<int64_t>(micro.size());
      }
      EXPECT_EQ(shard.global_count, std::min(config.global_batch(), config.num_samples - step * config.global_batch()));
    }
    EXPECT_EQ(seen, std::min(config.global_batch(), config.num_samples - step * config.global_batch()));
  }
  return visits;
}

class EverySampleOnce : public ::testing::TestWithParam<std::tuple<int64_t, int, int, int>> {};

TEST_P(EverySampleOnce, PartialPolicyCoversEpochExactlyOnce) {
  const auto [n, world, micro, accum] = GetParam();
  ShardConfig config{n, world, micro, accum, LastBatch::kPartial};
  for (int epoch = 0; epoch < 3; ++epoch) {
    const auto visits = VisitEpoch(config, 42, epoch);
    ASSERT_EQ(static_cast<int64_t>(visits.size()), n) << "epoch " << epoch;
    for (const auto& [index, count] : visits) {
      ASSERT_GE(index, 0);
      ASSERT_LT(index, n);
      ASSERT_EQ(count, 1) << "sample " << index << " in epoch " << epoch;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, EverySampleOnce,
                         ::testing::Values(std::make_tuple(64, 2, 8, 1),   // divides evenly
                                           std::make_tuple(100, 2, 8, 1),  // ragged last batch
                                           std::make_tuple(101, 3, 4, 2),  // odd size, accumulation
                                           std::make_tuple(5, 4, 2, 1),    // fewer samples than one global batch
                                           std::make_tuple(1000, 7, 3, 3), std::make_tuple(1, 1, 1, 1)));

TEST(Sampler, DropPolicySkipsOnlyTheTail) {
  ShardConfig config{100, 2, 8, 1, LastBatch::kDrop};
  EXPECT_EQ(config.steps_per_epoch(), 6);
  const auto visits = VisitEpoch(config, 7, 0);
  EXPECT_EQ(visits.size(), 96u);
  for (const auto& [index, count] : visits) EXPECT_EQ(count, 1);
}

TEST_P(EverySampleOnce, PadPolicyCoversEpochOnceWithFullBatchesEverywhere) {
  const auto [n, world, micro, accum] = GetParam();
  const ShardConfig config{n, world, micro, accum, LastBatch::kPad};
  const EpochOrder perm(EpochSeed(9, 0), n);
  std::map<int64_t, int> visits;
  for (int64_t step = 0; step < config.steps_per_epoch(); ++step) {
    int64_t real = 0;
    for (int r = 0; r < world; ++r) {
      const StepShard shard = ShardForStep(config, perm, step * config.global_batch(), r);
      for (const auto& batch : shard.micro_indices) {
        // Same shapes on every rank and micro-step, the tail included.
        ASSERT_EQ(static_cast<int>(batch.size()), micro);
        for (int64_t i : batch) {
          if (i == kPadSample) continue;
          ++visits[i];
          ++real;
        }
      }
      EXPECT_EQ(shard.global_count, std::min(config.global_batch(), n - step * config.global_batch()));
    }
    EXPECT_EQ(real, std::min(config.global_batch(), n - step * config.global_batch())) << "step " << step;
  }
  ASSERT_EQ(static_cast<int64_t>(visits.size()), n);
  for (const auto& [index, count] : visits) ASSERT_EQ(count, 1) << "sample " << index;
  const Position after = Advance(config, Position{0, (config.steps_per_epoch() - 1) * config.global_batch()});
  EXPECT_EQ(after.epoch, 1);
  EXPECT_EQ(after.cursor, 0);
}

TEST(Sampler, OrderDiffersPerEpochAndIsAPermutation) {
  const auto e0 = EpochPermutation(EpochSeed(1, 0), 1000);
  const auto e1 = EpochPermutation(EpochSeed(1, 1), 1000);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(std::set<int64_t>(e1.begin(), e1.end()).size(), 1000u);
  EXPECT_EQ(e0, EpochPermutation(EpochSeed(1, 0), 1000)) << "same (seed, epoch) must give the same order";
  EXPECT_NE(e0, EpochPermutation(EpochSeed(2, 0), 1000)) << "the seed must matter";
}

TEST(Sampler, PermutationIsStableAcrossBuilds) {
  // Pinned: a change here silently changes every job's data order, and resumed jobs would
  // replay or skip samples.
  const std::vector<int64_t> expected = {6, 8, 9, 0, 1, 5, 4, 2, 7, 3};
  EXPECT_EQ(EpochPermutation(EpochSeed(1234, 0), 10), expected);
}

TEST(Sampler, TwoRanksTogetherSeeWhatOneRankWithDoubleBatchSees) {
  const EpochOrder perm(EpochSeed(9, 0), 100);
  ShardConfig two{100, 2, 4, 1, LastBatch::kPartial};
  ShardConfig one{100, 1, 8, 1, LastBatch::kPartial};
  for (int64_t step = 0; step < two.steps_per_epoch(); ++step) {
    const int64_t cursor = step * two.global_batch();
    std::vector<int64_t> joined;
    for (int r = 0; r < 2; ++r) {
      const auto shard = ShardForStep(two, perm, cursor, r);
      joined.insert(joined.end(), shard.micro_indices[0].begin(), shard.micro_indices[0].end());
    }
    const auto single = ShardForStep(one, perm, cursor, 0);
    EXPECT_EQ(joined, single.micro_indices[0]) << "step " << step;
    EXPECT_EQ(ShardForStep(two, perm, cursor, 1).global_count, single.global_count);
  }
}

TEST(Sampler, LaterRanksMayGetNothingInARaggedStep) {
  ShardConfig config{5, 4, 2, 1, LastBatch::kPartial};
  const EpochOrder perm(EpochSeed(3, 0), 5);
  EXPECT_EQ(ShardForStep(config, perm, 0, 0).micro_indices[0].size(), 2u);
  EXPECT_EQ(ShardForStep(config, perm, 0, 2).micro_indices[0].size(), 1u);
  EXPECT_TRUE(ShardForStep(config, perm, 0, 3).micro_indices[0].empty());
  EXPECT_EQ(ShardForStep(config, perm, 0, 3).global_count, 5);
}

TEST(Sampler, StepPositionsAndTotals) {
  ShardConfig config{100, 2, 8, 1, LastBatch::kPartial};  // 7 steps per epoch
  EXPECT_EQ(config.steps_per_epoch(), 7);
  EXPECT_EQ(PositionOfStep(config, 0).epoch, 0);
  EXPECT_EQ(PositionOfStep(config, 6).cursor, 96);
  EXPECT_EQ(PositionOfStep(config, 7).epoch, 1);
  EXPECT_EQ(PositionOfStep(config, 7).cursor, 0);
  EXPECT_EQ(TotalSteps(config, 0, 3), 21);
  EXPECT_EQ(TotalSteps(config, 10, 0), 10);
  EXPECT_EQ(TotalSteps(config, 10, 1), 7);
  EXPECT_EQ(TotalSteps(config, 30, 2), 14);
}

}  // namespace
}  // namespace gradsync::ddp

namespace gradsync::ddp {
namespace {

TEST(Sampler, AdvancingVisitsTheSameStepsAsPositionOfStep) {
  for (LastBatch policy : {LastBatch::kPartial, LastBatch::kDrop}) {
    ShardConfig config{100, 2, 8, 1, policy};
    Position pos;
    for (int64_t step = 0; step < 3 * config.steps_per_epoch(); ++step) {
      const Position expected = PositionOfStep(config, step);
      ASSERT_EQ(pos.epoch, expected.epoch) << step;
      ASSERT_EQ(pos.cursor, expected.cursor) << step;
      EXPECT_EQ(StepsRemaining(config, pos, step, 0, 3), 3 * config.steps_per_epoch() - step);
      pos = Advance(config, pos);
    }
    EXPECT_EQ(pos.epoch, 3);
    EXPECT_EQ(StepsRemaining(config, pos, 3 * config.steps_per_epoch(), 0, 3), 0);
  }
}

TEST(Sampler, AResizedRunContinuesAtTheExactNextSample) {
  // Two ranks of 8 run 3 steps; then three ranks of 8 take over at the same cursor.
  const EpochOrder perm(EpochSeed(5, 0), 200);
  ShardConfig two{200, 2, 8, 1, LastBatch::kPartial};
  ShardConfig three{200, 3, 8, 1, LastBatch::kPartial};
  Position pos;
  std::vector<int64_t> seen;
  for (int s = 0; s < 3; ++s) {
    for (int r = 0; r < 2; ++r) {
      const StepShard shard = ShardForStep(two, perm, pos.cursor, r);
      seen.insert(seen.end(), shard.micro_indices[0].begin(), shard.micro_indices[0].end());
    }
    pos = Advance(two, pos);
  }
  while (pos.epoch == 0) {
    for (int r = 0; r < 3; ++r) {
      const StepShard shard = ShardForStep(three, perm, pos.cursor, r);
      seen.insert(seen.end(), shard.micro_indices[0].begin(), shard.micro_indices[0].end());
    }
    pos = Advance(three, pos);
  }
  EXPECT_EQ(seen, EpochPermutation(EpochSeed(5, 0), 200)) << "every sample exactly once, in order, across the resize";
  EXPECT_EQ(StepsRemaining(three, Position{0, 48}, 3, 10, 0), 7);
}


// Above kMaterialisedOrderMax the order is computed per position: still a bijection of [0, n) for
// n of any size (odd, just above a power of 4, just below one), holding no table.
TEST(EpochOrder, ALargeEpochIsAPermutationComputedPerPosition) {
  for (const int64_t n : {kMaterialisedOrderMax + 1, (int64_t{1} << 22) + 3, (int64_t{1} << 22) - 1}) {
    const EpochOrder order(EpochSeed(7, 0), n);
    ASSERT_FALSE(order.materialised()) << n;
    std::vector<bool> seen(static_cast<size_t>(n), false);
    int64_t fixed_points = 0;
    for (int64_t p = 0; p < n; ++p) {
      const int64_t i = order[p];
      ASSERT_GE(i, 0);
      ASSERT_LT(i, n);
      ASSERT_FALSE(seen[static_cast<size_t>(i)]) << "sample " << i << " twice in an epoch of " << n;
      seen[static_cast<size_t>(i)] = true;
      fixed_points += i == p;
    }
    // A shuffle, not the identity: about one fixed point is expected.
    EXPECT_LT(fixed_points, 20) << n;
  }
}

// Positions and samples in 64 bits: an epoch of 2^40 windows (llm.c's FineWeb at any realistic
// size is far below) maps its last positions inside [0, n), distinct, and the same every time.
TEST(EpochOrder, PositionsBeyond32BitsStayInsideTheEpoch) {
  const int64_t n = (int64_t{1} << 40) + 12345;
  const EpochOrder order(EpochSeed(11, 3), n);
  std::set<int64_t> seen;
  for (int64_t p = n - 1000; p < n; ++p) {
    const int64_t i = order[p];
    ASSERT_GE(i, 0);
    ASSERT_LT(i, n);
    seen.insert(i);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_GT(*seen.rbegin(), int64_t{1} << 32) << "the order never reaches past 32 bits";
  EXPECT_EQ(order[n - 1], EpochOrder(EpochSeed(11, 3), n)[n - 1]);
  EXPECT_NE(order[n - 1], EpochOrder(EpochSeed(11, 4), n)[n - 1]) << "the epoch must matter";
}

// The two constructions meet at kMaterialisedOrderMax: below it the table is Fisher-Yates, so
// every order a small dataset had stays as it was.
TEST(EpochOrder, SmallEpochsKeepTheirFisherYatesOrder) {
  const EpochOrder order(EpochSeed(1234, 0), 10);
  ASSERT_TRUE(order.materialised());
  const std::vector<int64_t> expected = {6, 8, 9, 0, 1, 5, 4, 2, 7, 3};
  for (int64_t p = 0; p < 10; ++p) EXPECT_EQ(order[p], expected[static_cast<size_t>(p)]);
}

// Sharding and resuming read the order only through positions: a large epoch shards across ranks
// and resizes exactly as a small one does.
TEST(EpochOrder, ALargeEpochShardsAndResizesAtTheExactNextSample) {
  const int64_t n = kMaterialisedOrderMax + 77;
  const EpochOrder order(EpochSeed(5, 1), n);
  ShardConfig two{n, 2, 8, 1, LastBatch::kPartial};
  ShardConfig three{n, 3, 8, 1, LastBatch::kPartial};
  Position pos{0, n - 200};  // near the end of the epoch
  std::vector<int64_t> seen;
  for (int s = 0; s < 3; ++s) {
    for (int r = 0; r < 2; ++r) {
      const StepShard shard = ShardForStep(two, order, pos.cursor, r);
      seen.insert(seen.end(), shard.micro_indices[0].begin(), shard.micro_indices[0].end());
    }
    pos = Advance(two, pos);
  }
  while (pos.epoch == 0) {
    for (int r = 0; r < 3; ++r) {
      const StepShard shard = ShardForStep(three, order, pos.cursor, r);
      seen.insert(seen.end(), shard.micro_indices[0].begin(), shard.micro_indices[0].end());
    }
    pos = Advance(three, pos);
  }
  ASSERT_EQ(seen.size(), 200u);
  for (int64_t k = 0; k < 200; ++k) EXPECT_EQ(seen[static_cast<size_t>(k)], order[n - 200 + k]);
}

}  // namespace
}  // namespace gradsync::ddp

// The validation partition: every window is evaluated by exactly one rank, in batches that are the
// same for every world size, for world sizes 1..5 and window counts that divide unevenly.
#include "gradsync/ddp/eval_partition.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace gradsync::ddp {
namespace {

// The batches rank `rank` evaluates, as [first, end) window ranges, in order.
std::vector<std::pair<int64_t, int64_t>> Batches(const EvalShard& s) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t b = s.first; b < s.end; b += s.batch) out.emplace_back(b, std::min(s.end, b + s.batch));
  return out;
}

TEST(EvalPartitionTest, EveryWindowOnceForWorldSizesOneToFive) {
  for (int64_t windows : {0, 1, 2, 3, 5, 7, 8, 13, 31, 64, 101}) {
    for (int64_t batch : {1, 2, 3, 4, 8}) {
      std::set<std::pair<int64_t, int64_t>> batches_of_one_rank;
      for (const auto& b : Batches(EvalShardFor(windows, batch, 1, 0))) batches_of_one_rank.insert(b);
      for (int world = 1; world <= 5; ++world) {
        std::map<int64_t, int> seen;
        std::set<std::pair<int64_t, int64_t>> batches;
        int64_t most = 0, least = windows;
        for (int rank = 0; rank < world; ++rank) {
          const EvalShard s = EvalShardFor(windows, batch, world, rank);
          ASSERT_LE(s.first, s.end);
          most = std::max(most, s.windows());
          least = std::min(least, s.windows());
          for (const auto& b : Batches(s)) {
            batches.insert(b);
            for (int64_t w = b.first; w < b.second; ++w) ++seen[w];
          }
        }
        const std::string where = "windows " + std::to_string(windows) + ", batch " + std::to_string(batch) +
                                  ", world " + std::to_string(world);
        ASSERT_EQ(static_cast<int64_t>(seen.size()), windows) << where;
        for (const auto& [w, n] : seen) {
          ASSERT_TRUE(w >= 0 && w < windows) << where;
          ASSERT_EQ(n, 1) << "window " << w << " evaluated " << n << " times; " << where;
        }
        EXPECT_EQ(batches, batches_of_one_rank) << "the same batches at every world size; " << where;
        EXPECT_LE(most - least, batch) << "shares differ by at most one batch; " << where;
      }
    }
  }
}

TEST(EvalPartitionTest, MostBatchesPerRankIsTheLargestShardsBatchCount) {
  for (int world = 1; world <= 5; ++world) {
    for (int64_t windows : {0, 1, 2, 7, 29, 113}) {
      for (int64_t batch : {1, 3, 4}) {
        int64_t most = 0;
        for (int r = 0; r < world; ++r) {
          most = std::max<int64_t>(most, static_cast<int64_t>(Batches(EvalShardFor(windows, batch, world, r)).size()));
        }
        EXPECT_EQ(MostBatchesPerRank(windows, batch, world), most)
            << windows << " windows in batches of " << batch << " over " << world;
      }
    }
  }
}

TEST(EvalPartitionTest, RanksBeyondTheBatchesGetNothing) {
  // 3 windows in batches of 2 are 2 batches: of 5 ranks, three have none.
  int empty = 0;
  for (int rank = 0; rank < 5; ++rank) empty += EvalShardFor(3, 2, 5, rank).windows() == 0 ? 1 : 0;
  EXPECT_EQ(empty, 3);
  EXPECT_EQ(EvalShardFor(3, 2, 5, 4).end, 3) << "the last rank ends at the last window";
}

}  // namespace
}  // namespace gradsync::ddp

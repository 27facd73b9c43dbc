// Each rank's memory with real processes (gradsync run): the summary names every rank's bytes of
// parameters, gradients and AdamW state, and its peak RSS. Under every ddp.sharding mode a rank
// holds exactly its shard of the moments (2 x 4 bytes x its BlockRange of the parameters); under
// "gradients" and "full" its shard of the gradients; under "full" its shard of the parameters
// plus at most the two layers it holds and fetches at once. Unsharded, every rank holds all of it.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli_harness.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/comm/communicator.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

// mlp.yaml with hidden layers of 37 and 19: 32*37+37 + 37*19+19 + 19*10+10 = 2143 parameters,
// which neither 2 nor 3 divides.
constexpr int64_t kParams = 2143;
constexpr int64_t kFloat = 4;

CommandResult RunJob(const std::string& sharding, int world, bool json) {
  std::vector<std::string> args = {"gradsync",
                                   "run",
                                   ExamplePath("mlp.yaml"),
                                   "--state-dir",
                                   MakeTempDir(),
                                   "--workers",
                                   std::to_string(world),
                                   "--set",
                                   absl::StrCat("training.worldSize=", world),
                                   "--set",
                                   "model.mlp.hiddenDims=[37, 19]",
                                   "--set",
                                   "training.maxSteps=4",
                                   "--set",
                                   "training.epochs=0",
                                   "--set",
                                   "ddp.sharding=" + sharding};
  if (json) args.insert(args.end(), {"-o", "json"});
  return RunBinary(args);
}

// One rank's entry of the summary's "memory" list.
struct RankBytes {
  int rank = -1;
  double params = 0, grads = 0, optimizer = 0, peak_rss = 0;
  bool has_device = false;
};

std::vector<RankBytes> MemoryOf(const std::string& summary) {
  google::protobuf::Struct s;
  std::vector<RankBytes> out;
  if (!google::protobuf::util::JsonStringToMessage(summary, &s).ok() || !s.fields().contains("memory")) return out;
  for (const google::protobuf::Value& v : s.fields().at("memory").list_value().values()) {
    const auto& f = v.struct_value().fields();
    auto number = [&f](const char* name) { return f.contains(name) ? f.at(name).number_value() : -1.0; };
    out.push_back({static_cast<int>(number("rank")), number("paramBytes"), number("gradBytes"),
                   number("optimizerBytes"), number("peakRssBytes"), f.contains("peakDeviceBytes")});
  }
  return out;
}

// What a rank should hold: exactly, or for the parameters of "full" a range.
struct Expected {
  int64_t params_min = 0, params_max = 0, grads = 0, optimizer = 0;
};

// Every rank's entry in rank order, against `expected(rank)`.
void ExpectMemory(const std::string& sharding, int world, const std::function<Expected(int)>& expected) {
  SCOPED_TRACE(absl::StrCat(sharding, " at world size ", world));
  const CommandResult r = RunJob(sharding, world, true);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err.substr(r.err.size() > 4000 ? r.err.size() - 4000 : 0);
  const std::vector<RankBytes> ranks = MemoryOf(r.out);
  ASSERT_EQ(ranks.size(), static_cast<size_t>(world)) << r.out;
  for (int rank = 0; rank < world; ++rank) {
    SCOPED_TRACE(absl::StrCat("rank ", rank));
    const RankBytes& m = ranks[rank];
    const Expected want = expected(rank);
    EXPECT_EQ(m.rank, rank);
    EXPECT_GE(m.params, want.params_min);
    EXPECT_LE(m.params, want.params_max);
    EXPECT_EQ(m.grads, want.grads);
    EXPECT_EQ(m.optimizer, want.optimizer);
    // A worker process, its libraries and its gRPC threads: megabytes, never less than the state.
    EXPECT_GT(m.peak_rss, 1 << 20);
    EXPECT_FALSE(m.has_device) << "a CPU rank has no device peak";
  }
}

// The moments of a rank's shard: two floats per parameter of its block.
int64_t ShardMoments(int world, int rank) {
  const auto [begin, end] = comm::BlockRange(kParams, world, rank);
  return 2 * kFloat * (end - begin);
}

int64_t ShardBytes(int world, int rank) { return ShardMoments(world, rank) / 2; }

TEST(MemoryReport, UnshardedEveryRankHoldsAllOfAdamWsState) {
  ExpectMemory("none", 2, [](int) {
    return Expected{kParams * kFloat, kParams * kFloat, kParams * kFloat, 2 * kFloat * kParams};
  });
}

TEST(MemoryReport, ShardedEachRankHoldsItsShardOfAdamWsState) {
  ExpectMemory("optimizer", 2, [](int rank) {
    return Expected{kParams * kFloat, kParams * kFloat, kParams * kFloat, ShardMoments(2, rank)};
  });
  ExpectMemory("gradients", 3, [](int rank) {
    return Expected{kParams * kFloat, kParams * kFloat, ShardBytes(3, rank), ShardMoments(3, rank)};
  });
  EXPECT_EQ(ShardMoments(2, 0) + ShardMoments(2, 1), 2 * kFloat * kParams) << "the shards cover the moments once";
}

// The MLP's layers are elements [0, 1221), [1221, 1943) and [1943, 2143) of the flat parameters.
// A rank of "full" holds its shard and, at its peak, the rest of two adjacent layers (the one
// computing and the one being fetched): less than the whole model for ranks 0 and 1; rank 2,
// owning none of the first layer, holds the rest of the first two at once.
TEST(MemoryReport, FullyShardedEachRankHoldsItsShardAndAtMostTwoLayersGathered) {
  const std::vector<std::pair<int64_t, int64_t>> layers = {{0, 1221}, {1221, 1943}, {1943, 2143}};
  ExpectMemory("full", 3, [&layers](int rank) {
    const auto [begin, end] = comm::BlockRange(kParams, 3, rank);
    auto unowned = [&, begin = begin, end = end](size_t l) {
      const auto [lo, hi] = layers[l];
      return (hi - lo) - std::max<int64_t>(0, std::min(hi, end) - std::max(lo, begin));
    };
    int64_t pair = 0;
    for (size_t l = 0; l + 1 < layers.size(); ++l) pair = std::max(pair, unowned(l) + unowned(l + 1));
    const int64_t shard = ShardBytes(3, rank);
    if (rank < 2) EXPECT_LT(shard + pair * kFloat, kParams * kFloat);
    return Expected{shard + kFloat, shard + pair * kFloat, shard, ShardMoments(3, rank)};
  });
}

// The human summary says what the fullest rank holds and the peak RSS.
TEST(MemoryReport, TheSummaryLineNamesTheFullestRanksBytes) {
  const CommandResult r = RunJob("optimizer", 3, false);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // 2143 floats: 8.4 KiB; the largest of three shards, 715 parameters: 5.6 KiB of moments.
  ASSERT_EQ(ShardMoments(3, 0), 2 * kFloat * 715);
  EXPECT_NE(r.out.find("  memory      8.4 KiB params, 8.4 KiB grads, 5.6 KiB optimizer on the fullest rank; "
                       "peak RSS "),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace gradsync::testing

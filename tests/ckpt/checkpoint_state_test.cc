// Sharded checkpoint parts, ReadCheckpointState and ReadCheckpointRange: shards written by any
// world size lay into the whole state or any range of it, overlapping (whole) parts resolve to the preferred rank, gaps
// and disagreements are DATA_LOSS naming the checkpoint, and version 1 (whole) parts still read.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ckpt_test_util.h"
#include "gmock/gmock.h"
#include "gradsync/core/digest.h"
#include "gtest/gtest.h"

namespace gradsync::ckpt::testing {
namespace {

using ::testing::HasSubstr;

// Rank r's shard of `whole` when `bounds` split it (bounds[r] .. bounds[r + 1]).
RankState Shard(const RankState& whole, const std::vector<int64_t>& bounds, int r) {
  RankState s = whole;
  s.rank = r;
  s.world_size = static_cast<int32_t>(bounds.size()) - 1;
  s.shard_begin = bounds[r];
  auto cut = [&](const std::vector<float>& v) {
    return std::vector<float>(v.begin() + bounds[r], v.begin() + bounds[r + 1]);
  };
  s.params = cut(whole.params);
  s.adam_m = cut(whole.adam_m);
  s.adam_v = cut(whole.adam_v);
  return s;
}

// Writes the parts and returns their manifest (not written: ReadCheckpointState takes it).
v1::CheckpointManifest WriteParts(const std::string& dir, const std::vector<RankState>& parts) {
  v1::CheckpointManifest m;
  m.set_dir(dir);
  m.set_world_size(static_cast<int32_t>(parts.size()));
  for (const RankState& p : parts) {
    absl::StatusOr<v1::CheckpointPart> written = WriteRankPart(dir, p);
    EXPECT_TRUE(written.ok()) << written.status();
    if (written.ok()) *m.add_parts() = *written;
  }
  return m;
}

class CheckpointStateTest : public TempDirTest {};

TEST_F(CheckpointStateTest, ShardsOfAnyWorldSizeLayIntoTheWholeState) {
  const RankState whole = SmallState();  // 9 elements
  // Even splits over 1 to 4 ranks, and one with an empty shard (rank 1) and a one-element shard.
  const std::vector<std::vector<int64_t>> layouts = {{0, 9}, {0, 5, 9}, {0, 3, 6, 9}, {0, 3, 5, 7, 9}, {0, 8, 8, 9}};
  for (const auto& bounds : layouts) {
    SCOPED_TRACE(absl::StrCat(bounds.size() - 1, " parts"));
    std::vector<RankState> parts;
    for (int r = 0; r + 1 < static_cast<int>(bounds.size()); ++r) parts.push_back(Shard(whole, bounds, r));
    const std::string dir = FreshDir(absl::StrCat("parts-", bounds.size(), "-", bounds[1]));
    const v1::CheckpointManifest m = WriteParts(dir, parts);
    ASSERT_EQ(m.parts_size(), static_cast<int>(parts.size()));
    EXPECT_EQ(m.parts(0).shard_begin(), 0);
    EXPECT_EQ(m.parts(0).shard_elements(), bounds[1]);

    absl::StatusOr<RankState> read = ReadRankPart(dir, m.parts(0));
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->shard_begin, 0);
    EXPECT_EQ(read->params, parts[0].params) << "a part reads back as its shard";

    const int last = static_cast<int>(parts.size()) - 1;
    absl::StatusOr<RankState> state = ReadCheckpointState(m, last);
    ASSERT_TRUE(state.ok()) << state.status();
    EXPECT_TRUE(state->whole());
    EXPECT_EQ(state->params, whole.params);
    EXPECT_EQ(state->adam_m, whole.adam_m);
    EXPECT_EQ(state->adam_v, whole.adam_v);
    EXPECT_EQ(state->rank, last) << "the run fields are the preferred rank's";
    EXPECT_EQ(state->adam_step, whole.adam_step);
  }
}

TEST_F(CheckpointStateTest, WherePartsOverlapThePreferredRanksValuesWin) {
  // Whole parts, as ranks with rank-local parameters write: each rank's own values differ.
  std::vector<RankState> parts = {SmallState(0, 2, 0.0f), SmallState(1, 2, 100.0f)};
  const std::string dir = FreshDir("overlap");
  const v1::CheckpointManifest m = WriteParts(dir, parts);
  for (int r : {0, 1}) {
    absl::StatusOr<RankState> state = ReadCheckpointState(m, r);
    ASSERT_TRUE(state.ok()) << state.status();
    EXPECT_EQ(state->params, parts[r].params) << "rank " << r << " resumes with its own values";
  }
  absl::StatusOr<RankState> absent = ReadCheckpointState(m, 5);
  ASSERT_TRUE(absent.ok()) << absent.status();
  EXPECT_EQ(absent->params, parts[0].params) << "a rank the checkpoint lacks takes rank 0's";
}

TEST_F(CheckpointStateTest, GapsAndDisagreementsAreDataLossNamingTheCheckpoint) {
  const RankState whole = SmallState();
  const std::string gap_dir = FreshDir("gap");
  const v1::CheckpointManifest gap = WriteParts(gap_dir, {Shard(whole, {0, 4, 9}, 0), Shard(whole, {0, 6, 9}, 1)});
  absl::StatusOr<RankState> state = ReadCheckpointState(gap, 0);
  EXPECT_EQ(state.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(state.status().message(), HasSubstr(gap_dir + ": element 4 of 9 is in no part"));

  RankState bare = Shard(whole, {0, 4, 9}, 1);
  bare.adam_m.clear();
  bare.adam_v.clear();
  const std::string mixed_dir = FreshDir("mixed");
  const v1::CheckpointManifest mixed = WriteParts(mixed_dir, {Shard(whole, {0, 4, 9}, 0), bare});
  state = ReadCheckpointState(mixed, 0);
  EXPECT_EQ(state.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(state.status().message(), HasSubstr("rank 1's part lacks optimizer state where rank 0's does not"));

  RankState other = SmallState(1, 2);
  other.layout = nn::ParamLayout();
  other.layout.Add("w", {9}, true);
  const std::string model_dir = FreshDir("model");
  const v1::CheckpointManifest models = WriteParts(model_dir, {SmallState(0, 2), other});
  state = ReadCheckpointState(models, 0);
  EXPECT_EQ(state.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(state.status().message(), HasSubstr("rank 1's part holds another model than rank 0's"));
}

// Whatever world size wrote the parts, every rank of any other reads exactly its own range.
TEST_F(CheckpointStateTest, ARangeReadsThoseElementsOfTheWholeStateAlone) {
  const RankState whole = SmallState();  // 9 elements
  const std::vector<std::vector<int64_t>> written = {{0, 9}, {0, 5, 9}, {0, 3, 6, 9}, {0, 8, 8, 9}};
  for (const auto& bounds : written) {
    std::vector<RankState> parts;
    for (int r = 0; r + 1 < static_cast<int>(bounds.size()); ++r) parts.push_back(Shard(whole, bounds, r));
    const v1::CheckpointManifest m = WriteParts(FreshDir(absl::StrCat("range-", bounds.size(), "-", bounds[1])), parts);
    for (int ranks = 1; ranks <= 4; ++ranks) {
      for (int r = 0; r < ranks; ++r) {
        const int64_t begin = 9 * r / ranks, end = 9 * (r + 1) / ranks;
        SCOPED_TRACE(absl::StrCat(parts.size(), " parts, [", begin, ", ", end, ")"));
        absl::StatusOr<RankState> range = ReadCheckpointRange(m, r, begin, end);
        ASSERT_TRUE(range.ok()) << range.status();
        EXPECT_EQ(range->shard_begin, begin);
        const auto cut = [&](const std::vector<float>& v) {
          return std::vector<float>(v.begin() + begin, v.begin() + end);
        };
        EXPECT_EQ(range->params, cut(whole.params));
        EXPECT_EQ(range->adam_m, cut(whole.adam_m));
        EXPECT_EQ(range->adam_v, cut(whole.adam_v));
        EXPECT_EQ(range->layout.total_numel(), 9);
        EXPECT_EQ(range->adam_step, whole.adam_step);
      }
    }
  }
}

TEST_F(CheckpointStateTest, ARangeHonoursThePreferredRankAndChecksOnlyItsOwnCoverage) {
  std::vector<RankState> whole_parts = {SmallState(0, 2, 0.0f), SmallState(1, 2, 100.0f)};
  const v1::CheckpointManifest overlap = WriteParts(FreshDir("range-overlap"), whole_parts);
  absl::StatusOr<RankState> range = ReadCheckpointRange(overlap, 1, 2, 5);
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(range->params, std::vector<float>(whole_parts[1].params.begin() + 2, whole_parts[1].params.begin() + 5));
  EXPECT_EQ(range->rank, 1);

  // Elements 4 and 5 are in no part: a range without them reads, one with them is DATA_LOSS naming
  // the first.
  const RankState whole = SmallState();
  const std::string gap_dir = FreshDir("range-gap");
  const v1::CheckpointManifest gap = WriteParts(gap_dir, {Shard(whole, {0, 4, 9}, 0), Shard(whole, {0, 6, 9}, 1)});
  EXPECT_TRUE(ReadCheckpointRange(gap, 0, 6, 9).ok());
  range = ReadCheckpointRange(gap, 0, 3, 6);
  EXPECT_EQ(range.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(range.status().message(), HasSubstr(gap_dir + ": element 4 of 9 is in no part"));

  for (const auto& [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{-1, 3}, {5, 4}}) {
    EXPECT_EQ(ReadCheckpointRange(overlap, 0, begin, end).status().code(), absl::StatusCode::kInvalidArgument)
        << "[" << begin << ", " << end << ")";
  }
  range = ReadCheckpointRange(overlap, 0, 0, 10);
  EXPECT_EQ(range.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(range.status().message(), HasSubstr("beyond the checkpoint's model of 9"));
}

TEST_F(CheckpointStateTest, AShardOutsideTheLayoutIsRefusedAtWrite) {
  RankState s = SmallState();
  s.shard_begin = 5;  // 9 values from element 5 of 9
  EXPECT_EQ(WriteRankPart(FreshDir("outside"), s).status().code(), absl::StatusCode::kInvalidArgument);
}

// A version 1 part (whole, written before sharded checkpoints): the version 3 bytes of the same
// whole state with the shard fields replaced by the moment count, re-checksummed with FNV-1a.
TEST_F(CheckpointStateTest, VersionOnePartsStillRead) {
  const std::string dir = FreshDir("v1");
  const RankState s = SmallState();
  absl::StatusOr<v1::CheckpointPart> part = WriteRankPart(dir, s);
  ASSERT_TRUE(part.ok()) << part.status();
  const std::string path = dir + "/" + part->file();
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t tensors = (s.params.size() + s.adam_m.size() + s.adam_v.size()) * sizeof(float);
  const size_t shard_fields = bytes.size() - 8 - tensors - 17;  // u64 begin, u64 count, u8 flag
  const uint64_t moments = s.adam_m.size();
  std::string v1 = bytes.substr(0, shard_fields);
  v1.append(reinterpret_cast<const char*>(&moments), sizeof(moments));
  v1.append(bytes.substr(shard_fields + 17, tensors));
  const uint32_t version = 1;
  std::memcpy(v1.data() + 8, &version, sizeof(version));
  const uint64_t size = v1.size() + 8;
  std::memcpy(v1.data() + 12, &size, sizeof(size));
  const uint64_t hash = Fnv1a64(std::as_bytes(std::span(v1.data(), v1.size())));
  v1.append(reinterpret_cast<const char*>(&hash), sizeof(hash));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << v1;

  absl::StatusOr<RankState> read = ReadRankPart(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->whole());
  EXPECT_EQ(read->params, s.params);
  EXPECT_EQ(read->adam_v, s.adam_v);
}

}  // namespace
}  // namespace gradsync::ckpt::testing

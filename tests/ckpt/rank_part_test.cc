#include <filesystem>
#include <fstream>
#include <iterator>

#include "ckpt_test_util.h"
#include "gmock/gmock.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/ckpt/checksum.h"
#include "gtest/gtest.h"

namespace gradsync::ckpt {
namespace {

using testing::FileNames;
using testing::FlipByte;
using ::testing::HasSubstr;
using testing::SmallState;

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class RankPartTest : public testing::TempDirTest {};

TEST_F(RankPartTest, RoundTripsEveryField) {
  const std::string dir = FreshDir("step") + "/nested/step-000000012";
  const RankState in = SmallState(1, 2);
  absl::StatusOr<v1::CheckpointPart> part = WriteRankPart(dir, in);
  ASSERT_TRUE(part.ok()) << part.status();
  absl::StatusOr<RankState> out = ReadRankPart(dir + "/rank-00001.bin");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->params, in.params);
  EXPECT_EQ(out->adam_m, in.adam_m);
  EXPECT_EQ(out->adam_v, in.adam_v);
  EXPECT_EQ(out->adam_step, 12);
  EXPECT_EQ(out->step, 12);
  EXPECT_EQ(out->epoch, 1);
  EXPECT_EQ(out->cursor, 384);
  EXPECT_EQ(out->rank, 1);
  EXPECT_EQ(out->world_size, 2);
  EXPECT_EQ(out->seed, 0xfeedbeefcafeULL);
  EXPECT_EQ(out->job_id, "job-7");
  EXPECT_EQ(out->generation, 3);
  EXPECT_EQ(out->model.SerializeAsString(), in.model.SerializeAsString());
  ASSERT_EQ(out->layout.size(), 2);
  EXPECT_EQ(out->layout.Hash(), in.layout.Hash());
  EXPECT_EQ(out->layout.param(1).name, "layer.bias");
  EXPECT_EQ(out->layout.param(1).shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(out->layout.param(1).offset, 6);
  EXPECT_TRUE(out->layout.param(0).weight_decay);
  EXPECT_FALSE(out->layout.param(1).weight_decay);
}

TEST_F(RankPartTest, ReturnsThePartToReport) {
  const std::string dir = FreshDir("step");
  absl::StatusOr<v1::CheckpointPart> part = WriteRankPart(dir, SmallState(1, 2));
  ASSERT_TRUE(part.ok()) << part.status();
  const std::string bytes = Contents(dir + "/rank-00001.bin");
  EXPECT_EQ(part->rank(), 1);
  EXPECT_EQ(part->file(), "rank-00001.bin");
  EXPECT_EQ(part->bytes(), static_cast<int64_t>(bytes.size()));
  StreamingChecksum whole(ChecksumAlgorithm::kXxh3_64);
  whole.Update(std::as_bytes(std::span(bytes)));
  EXPECT_EQ(part->checksum(), whole.Digest());
  // Only the renamed file is left: no temporary.
  EXPECT_EQ(FileNames(dir), std::vector<std::string>{"rank-00001.bin"});
}

TEST_F(RankPartTest, RoundTripsAStateWithoutOptimizerMoments) {
  const std::string dir = FreshDir("step");
  RankState in = SmallState();
  in.adam_m.clear();
  in.adam_v.clear();
  ASSERT_TRUE(WriteRankPart(dir, in).ok());
  absl::StatusOr<RankState> out = ReadRankPart(dir + "/rank-00000.bin");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->params, in.params);
  EXPECT_TRUE(out->adam_m.empty());
  EXPECT_TRUE(out->adam_v.empty());
}

// A shard of four ranks holds about a quarter of the elements (three floats each, with the
// moments): less than the one large tensor of the layout it records, which must still read back.
TEST_F(RankPartTest, AShardSmallerThanOneTensorOfItsLayoutReadsBack) {
  const std::string dir = FreshDir("step");
  RankState in = SmallState(3, 4);
  in.layout = nn::ParamLayout();
  in.layout.Add("big.weight", {100, 100}, true);
  in.layout.Add("big.bias", {4}, false);
  in.shard_begin = 7503;
  in.params.assign(2501, 0.5f);
  in.adam_m.assign(2501, 0.25f);
  in.adam_v.assign(2501, 0.125f);
  ASSERT_TRUE(WriteRankPart(dir, in).ok());
  absl::StatusOr<RankState> out = ReadRankPart(dir + "/rank-00003.bin");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shard_begin, 7503);
  EXPECT_EQ(out->params, in.params);
  EXPECT_EQ(out->adam_v, in.adam_v);
  EXPECT_EQ(out->layout.Hash(), in.layout.Hash());
}

TEST_F(RankPartTest, ReplacesAnExistingPart) {
  const std::string dir = FreshDir("step");
  ASSERT_TRUE(WriteRankPart(dir, SmallState(0, 1, 0.0f)).ok());
  ASSERT_TRUE(WriteRankPart(dir, SmallState(0, 1, 10.0f)).ok());
  absl::StatusOr<RankState> out = ReadRankPart(dir + "/rank-00000.bin");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->params[0], 11.0f);
  EXPECT_EQ(FileNames(dir), std::vector<std::string>{"rank-00000.bin"});
}

TEST_F(RankPartTest, RefusesBuffersThatDoNotMatchTheLayout) {
  const std::string dir = FreshDir("step");
  RankState s = SmallState();
  s.params.pop_back();
  EXPECT_EQ(WriteRankPart(dir, s).status().code(), absl::StatusCode::kInvalidArgument);
  s = SmallState();
  s.adam_v.pop_back();
  EXPECT_EQ(WriteRankPart(dir, s).status().code(), absl::StatusCode::kInvalidArgument);
  s = SmallState(2, 2);
  EXPECT_EQ(WriteRankPart(dir, s).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(FileNames(dir).empty());
}

TEST_F(RankPartTest, AFlippedByteInTheTensorsIsAChecksumMismatch) {
  const std::string dir = FreshDir("step");
  ASSERT_TRUE(WriteRankPart(dir, SmallState()).ok());
  const std::string path = dir + "/rank-00000.bin";
  FlipByte(path, -20);
  absl::StatusOr<RankState> out = ReadRankPart(path);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(out.status().message(), HasSubstr(path));
  EXPECT_THAT(out.status().message(), HasSubstr("checksum mismatch"));
}

TEST_F(RankPartTest, AFlippedByteInTheStructureIsAlsoReportedAsCorruption) {
  const std::string dir = FreshDir("step");
  ASSERT_TRUE(WriteRankPart(dir, SmallState()).ok());
  const std::string path = dir + "/rank-00000.bin";
  // The high byte of the job id's length: decoding fails before the checksum is reached.
  FlipByte(path, 20 + 3);
  absl::StatusOr<RankState> out = ReadRankPart(path);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(out.status().message(), HasSubstr("checksum mismatch"));
}

TEST_F(RankPartTest, EveryFlippedByteAndEveryTruncationIsDataLoss) {
  const std::string dir = FreshDir("step");
  ASSERT_TRUE(WriteRankPart(dir, SmallState()).ok());
  const std::string path = dir + "/rank-00000.bin";
  const std::string good = Contents(path);
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(~bad[i]);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bad;
    EXPECT_EQ(ReadRankPart(path).status().code(), absl::StatusCode::kDataLoss) << "flipped byte " << i;
  }
  for (size_t n = 0; n < good.size(); ++n) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << good.substr(0, n);
    EXPECT_EQ(ReadRankPart(path).status().code(), absl::StatusCode::kDataLoss) << "first " << n << " bytes";
  }
}

TEST_F(RankPartTest, ATruncatedFileSaysTruncated) {
  const std::string dir = FreshDir("step");
  ASSERT_TRUE(WriteRankPart(dir, SmallState()).ok());
  const std::string path = dir + "/rank-00000.bin";
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 5);
  absl::StatusOr<RankState> out = ReadRankPart(path);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(out.status().message(), HasSubstr(path));
  EXPECT_THAT(out.status().message(), HasSubstr("truncated"));
  std::filesystem::resize_file(path, 10);
  EXPECT_THAT(ReadRankPart(path).status().message(), HasSubstr("truncated"));
}

TEST_F(RankPartTest, ForeignFilesAndOtherVersionsAreRefused) {
  const std::string dir = FreshDir("step");
  const std::string path = dir + "/rank-00000.bin";
  std::ofstream(path) << "hello world, not a checkpoint";
  absl::StatusOr<RankState> foreign = ReadRankPart(path);
  EXPECT_EQ(foreign.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(foreign.status().message(), HasSubstr("bad magic"));

  ASSERT_TRUE(WriteRankPart(dir, SmallState()).ok());
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    f.put('\x07');
  }
  absl::StatusOr<RankState> newer = ReadRankPart(path);
  EXPECT_EQ(newer.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(newer.status().message(), HasSubstr("unsupported checkpoint part version 7"));
}

TEST_F(RankPartTest, AMissingFileIsNotFound) {
  const std::string path = FreshDir("step") + "/rank-00000.bin";
  absl::StatusOr<RankState> out = ReadRankPart(path);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(out.status().message(), HasSubstr(path));
}

class PartAgainstManifestTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    dir_ = FreshDir("step");
    absl::StatusOr<v1::CheckpointPart> part = WriteRankPart(dir_, SmallState(1, 2));
    ASSERT_TRUE(part.ok()) << part.status();
    part_ = *part;
    path_ = dir_ + "/" + part_.file();
  }

  std::string dir_, path_;
  v1::CheckpointPart part_;
};

TEST_F(PartAgainstManifestTest, ReadsAMatchingPart) {
  absl::StatusOr<RankState> out = ReadRankPart(dir_, part_);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->rank, 1);
}

TEST_F(PartAgainstManifestTest, ASizeDifferentFromTheManifestIsDataLoss) {
  part_.set_bytes(part_.bytes() + 1);
  absl::StatusOr<RankState> out = ReadRankPart(dir_, part_);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(out.status().message(), HasSubstr(path_));
  EXPECT_THAT(out.status().message(), HasSubstr("the manifest says"));
}

TEST_F(PartAgainstManifestTest, AnotherValidFileOfTheSameSizeFailsTheManifestChecksum) {
  ASSERT_TRUE(WriteRankPart(dir_, SmallState(1, 2, 1.0f)).ok());
  absl::StatusOr<RankState> out = ReadRankPart(dir_, part_);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(out.status().message(), HasSubstr("differs from the manifest"));
  EXPECT_TRUE(ReadRankPart(path_).ok());
}

TEST_F(PartAgainstManifestTest, AFlippedByteIsDataLoss) {
  FlipByte(path_, -30);
  absl::StatusOr<RankState> out = ReadRankPart(dir_, part_);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(out.status().message(), HasSubstr(path_));
}

TEST_F(PartAgainstManifestTest, AMissingPartIsNotFoundNamingTheFile) {
  std::filesystem::remove(path_);
  absl::StatusOr<RankState> out = ReadRankPart(dir_, part_);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(out.status().message(), HasSubstr(path_));
}

TEST_F(PartAgainstManifestTest, ARankDifferentFromTheManifestIsDataLoss) {
  part_.set_rank(0);
  absl::StatusOr<RankState> out = ReadRankPart(dir_, part_);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(out.status().message(), HasSubstr("holds rank 1"));
}

TEST_F(PartAgainstManifestTest, AFileNameOutsideTheDirectoryIsRefused) {
  part_.set_file("../rank-00001.bin");
  EXPECT_EQ(ReadRankPart(dir_, part_).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace gradsync::ckpt

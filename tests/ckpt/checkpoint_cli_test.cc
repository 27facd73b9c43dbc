// `gradsync checkpoint inspect | diff | list --root` run in-process against real files.
#include <filesystem>

#include "ckpt_test_util.h"
#include "commands.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gtest/gtest.h"

namespace gradsync::ckpt {
namespace {

using testing::FlipByte;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::SmallState;
using testing::WriteCheckpoint;

struct Result {
  int code = -1;
  std::string out, err;
};

Result Cli(const std::vector<std::string>& argv) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  Result r;
  r.code = cli::CheckpointCommand(argv);
  r.out = ::testing::internal::GetCapturedStdout();
  r.err = ::testing::internal::GetCapturedStderr();
  return r;
}

google::protobuf::Value Json(const std::string& text) {
  google::protobuf::Value v;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(text, &v).ok()) << text;
  return v;
}

const google::protobuf::Value& Field(const google::protobuf::Value& v, const std::string& name) {
  return v.struct_value().fields().at(name);
}

class CheckpointCliTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    root_ = FreshDir("root");
    WriteCheckpoint(root_, 10);
    WriteCheckpoint(root_, 20);
    dir_ = CheckpointDir(root_, 20);
  }

  std::string root_, dir_;
};

TEST_F(CheckpointCliTest, InspectADirectoryShowsManifestVerificationAndTensors) {
  const Result r = Cli({"inspect", dir_});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job-7 (generation 3)"));
  EXPECT_THAT(r.out, HasSubstr("20 (epoch 1, cursor 384)"));
  EXPECT_THAT(r.out, HasSubstr("rank-00001.bin"));
  EXPECT_THAT(r.out, HasSubstr("verified    yes"));
  EXPECT_THAT(r.out, HasSubstr("2 tensors, 9 parameters"));
  EXPECT_THAT(r.out, HasSubstr("layer.weight  [2, 3]"));
}

TEST_F(CheckpointCliTest, InspectACorruptDirectoryFails) {
  FlipByte(dir_ + "/rank-00001.bin", 100);
  const Result r = Cli({"inspect", dir_});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("verified    NO: "));
  EXPECT_THAT(r.out, HasSubstr("rank-00001.bin: checksum"));
}

TEST_F(CheckpointCliTest, InspectAPartFileAsJson) {
  const Result r = Cli({"inspect", dir_ + "/rank-00001.bin", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const google::protobuf::Value v = Json(r.out);
  const google::protobuf::Value& part = Field(v, "part");
  EXPECT_EQ(Field(part, "rank").number_value(), 1);
  EXPECT_EQ(Field(part, "step").number_value(), 20);
  EXPECT_EQ(Field(part, "params").number_value(), 9);
  EXPECT_EQ(Field(part, "tensors").list_value().values_size(), 2);
}

TEST_F(CheckpointCliTest, InspectAnUncommittedDirectoryFails) {
  WriteCheckpoint(root_, 30, 2, /*commit=*/false);
  const Result r = Cli({"inspect", CheckpointDir(root_, 30)});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("not committed"));
}

TEST_F(CheckpointCliTest, DiffPrintsPerTensorDifferences) {
  const std::string a = FreshDir("a"), b = FreshDir("b");
  ASSERT_TRUE(WriteRankPart(a, SmallState(0, 1, 0.0f)).ok());
  ASSERT_TRUE(WriteRankPart(b, SmallState(0, 1, 0.5f)).ok());
  const Result text = Cli({"diff", a + "/rank-00000.bin", b + "/rank-00000.bin"});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("layer.weight"));
  EXPECT_THAT(text.out, HasSubstr("(0 of 2 tensors identical)"));

  const Result r = Cli({"diff", a + "/rank-00000.bin", b + "/rank-00000.bin", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const google::protobuf::Value v = Json(r.out);
  const auto& tensors = Field(v, "tensors").list_value();
  ASSERT_EQ(tensors.values_size(), 2);
  // Weights 1..6 moved by 0.5: largest relative move at 1 -> 1.5. Biases -1..-3: at -1 -> -0.5.
  EXPECT_EQ(Field(tensors.values(0), "name").string_value(), "layer.weight");
  EXPECT_DOUBLE_EQ(Field(tensors.values(0), "maxAbs").number_value(), 0.5);
  EXPECT_DOUBLE_EQ(Field(tensors.values(0), "maxRel").number_value(), 0.5 / 1.5);
  EXPECT_DOUBLE_EQ(Field(tensors.values(1), "maxAbs").number_value(), 0.5);
  EXPECT_DOUBLE_EQ(Field(tensors.values(1), "maxRel").number_value(), 0.5);
  EXPECT_FALSE(Field(v, "identical").bool_value());
}

TEST_F(CheckpointCliTest, DiffOfTwoCheckpointDirectoriesComparesRankZero) {
  const Result r = Cli({"diff", CheckpointDir(root_, 10), dir_});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(2 of 2 tensors identical)"));
}

TEST_F(CheckpointCliTest, DiffOfDifferentLayoutsFails) {
  const std::string other = FreshDir("other");
  RankState s;
  s.layout.Add("layer.weight", {3, 2}, true);
  s.params.assign(6, 0.0f);
  ASSERT_TRUE(WriteRankPart(other, s).ok());
  const Result r = Cli({"diff", dir_, other + "/rank-00000.bin"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("layer.weight"));
}

TEST_F(CheckpointCliTest, ListARootShowsCommittedStepsAndVerification) {
  WriteCheckpoint(root_, 30, 2, /*commit=*/false);
  Result r = Cli({"list", "--root", root_});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(CheckpointDir(root_, 10)));
  EXPECT_THAT(r.out, HasSubstr(CheckpointDir(root_, 20)));
  EXPECT_THAT(r.out, Not(HasSubstr(CheckpointDir(root_, 30))));
  EXPECT_THAT(r.out, Not(HasSubstr("NO")));

  std::filesystem::remove(CheckpointDir(root_, 10) + "/rank-00000.bin");
  r = Cli({"list", "--root", root_, "-o", "json"});
  EXPECT_EQ(r.code, 1);
  const google::protobuf::Value v = Json(r.out);
  ASSERT_EQ(v.list_value().values_size(), 2);
  EXPECT_FALSE(Field(v.list_value().values(0), "verified").bool_value());
  EXPECT_THAT(Field(v.list_value().values(0), "verifyError").string_value(), HasSubstr("missing"));
  EXPECT_TRUE(Field(v.list_value().values(1), "verified").bool_value());
}

TEST_F(CheckpointCliTest, BadUsageExitsTwo) {
  EXPECT_EQ(Cli({}).code, 2);
  EXPECT_EQ(Cli({"inspect"}).code, 2);
  EXPECT_EQ(Cli({"diff", dir_}).code, 2);
  EXPECT_EQ(Cli({"list"}).code, 2);
  EXPECT_EQ(Cli({"list", "job-1", "--root", root_}).code, 2);
  EXPECT_EQ(Cli({"inspect", dir_, "-o", "bogus"}).code, 2);
  EXPECT_EQ(Cli({"inspect", dir_, "-o", "yaml"}).code, 0) << "yaml is one of inspect's formats";
  EXPECT_EQ(Cli({"frobnicate"}).code, 2);
  EXPECT_EQ(Cli({"inspect", dir_, "--bogus"}).code, 2);
}

TEST_F(CheckpointCliTest, MissingPathsFail) {
  EXPECT_EQ(Cli({"inspect", root_ + "/nothing"}).code, 1);
  EXPECT_EQ(Cli({"list", "--root", root_ + "/nothing"}).code, 1);
}

}  // namespace
}  // namespace gradsync::ckpt

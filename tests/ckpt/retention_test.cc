#include <filesystem>
#include <fstream>

#include "ckpt_test_util.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gtest/gtest.h"

namespace gradsync::ckpt {
namespace {

using testing::FileNames;
using testing::WriteCheckpoint;

std::vector<int64_t> Steps(const std::vector<v1::CheckpointManifest>& manifests) {
  std::vector<int64_t> out;
  for (const auto& m : manifests) out.push_back(m.step());
  return out;
}

class ListCommittedTest : public testing::TempDirTest {};
class ApplyRetentionTest : public testing::TempDirTest {};

TEST(CheckpointDirTest, NamesTheStepWithNineDigits) {
  EXPECT_EQ(CheckpointDir("/ckpt/job-1", 42), "/ckpt/job-1/step-000000042");
  EXPECT_EQ(PartFileName(3), "rank-00003.bin");
}

TEST_F(ListCommittedTest, ListsCommittedStepsOldestFirstAndSkipsTheRest) {
  const std::string root = FreshDir("root");
  WriteCheckpoint(root, 30);
  WriteCheckpoint(root, 10);
  WriteCheckpoint(root, 200);
  WriteCheckpoint(root, 40, 2, /*commit=*/false);
  WriteCheckpoint(root, 25);
  std::ofstream(CheckpointDir(root, 25) + "/MANIFEST.json") << "not json";
  std::filesystem::create_directories(root + "/other");
  std::ofstream(root + "/step-000000050") << "a file, not a directory";

  const std::vector<v1::CheckpointManifest> listed = ListCommitted(root);
  EXPECT_EQ(Steps(listed), (std::vector<int64_t>{10, 30, 200}));
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[0].dir(), CheckpointDir(root, 10));
  EXPECT_EQ(listed[0].parts_size(), 2);
}

TEST_F(ListCommittedTest, AnAbsentRootHasNoCheckpoints) {
  EXPECT_TRUE(ListCommitted(FreshDir("root") + "/absent").empty());
}

TEST_F(ApplyRetentionTest, KeepsTheNewestAndRemovesStalePartialDirectories) {
  const std::string root = FreshDir("root");
  WriteCheckpoint(root, 5, 2, /*commit=*/false);
  WriteCheckpoint(root, 10);
  WriteCheckpoint(root, 15, 2, /*commit=*/false);
  WriteCheckpoint(root, 20);
  WriteCheckpoint(root, 30);
  WriteCheckpoint(root, 40, 2, /*commit=*/false);
  std::filesystem::create_directories(root + "/other");

  ASSERT_TRUE(ApplyRetention(root, 2).ok());
  // 40 may be a checkpoint in progress; unrelated entries are left alone.
  EXPECT_EQ(FileNames(root), (std::vector<std::string>{"other", "step-000000020", "step-000000030", "step-000000040"}));
  EXPECT_TRUE(VerifyCheckpoint(CheckpointDir(root, 30)).ok());
}

TEST_F(ApplyRetentionTest, NeverDeletesTheNewestCommitted) {
  const std::string root = FreshDir("root");
  WriteCheckpoint(root, 10);
  WriteCheckpoint(root, 20);
  ASSERT_TRUE(ApplyRetention(root, 0).ok());
  EXPECT_EQ(Steps(ListCommitted(root)), (std::vector<int64_t>{20}));
  ASSERT_TRUE(ApplyRetention(root, 5).ok());
  EXPECT_EQ(Steps(ListCommitted(root)), (std::vector<int64_t>{20}));
}

TEST_F(ApplyRetentionTest, WithoutACommittedCheckpointNothingIsDeleted) {
  const std::string root = FreshDir("root");
  WriteCheckpoint(root, 10, 2, /*commit=*/false);
  WriteCheckpoint(root, 20, 2, /*commit=*/false);
  ASSERT_TRUE(ApplyRetention(root, 1).ok());
  EXPECT_EQ(FileNames(root), (std::vector<std::string>{"step-000000010", "step-000000020"}));
  EXPECT_TRUE(ApplyRetention(root + "/absent", 1).ok());
}

}  // namespace
}  // namespace gradsync::ckpt

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ckpt_test_util.h"
#include "gmock/gmock.h"
#include "absl/time/clock.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/ckpt/weights_file.h"
#include "gtest/gtest.h"

namespace gradsync::ckpt {
namespace {

using testing::FileNames;
using testing::FlipByte;
using ::testing::HasSubstr;
using testing::WriteCheckpoint;

class ManifestTest : public testing::TempDirTest {};

TEST_F(ManifestTest, WritesAtomicallyAndReadsBack) {
  const std::string dir = FreshDir("step-000000007");
  v1::CheckpointManifest m;
  m.set_job_id("job-7");
  m.set_generation(2);
  m.set_step(7);
  m.set_world_size(1);
  m.set_epoch(0);
  m.set_cursor(56);
  m.set_dir(dir);
  m.set_total_bytes(1234);
  m.set_duration_seconds(0.25);
  m.mutable_commit_time()->set_seconds(1700000000);
  v1::CheckpointPart* part = m.add_parts();
  part->set_rank(0);
  part->set_file("rank-00000.bin");
  part->set_bytes(1234);
  part->set_checksum("fnv1a64:0123456789abcdef");
  ASSERT_TRUE(WriteManifest(dir, m).ok());
  EXPECT_EQ(FileNames(dir), std::vector<std::string>{"MANIFEST.json"});

  absl::StatusOr<v1::CheckpointManifest> back = ReadManifest(dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->SerializeAsString(), m.SerializeAsString());
  std::ifstream in(dir + "/MANIFEST.json");
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(json, HasSubstr("\"jobId\": \"job-7\""));
  EXPECT_THAT(json, HasSubstr("\"epoch\": 0"));  // zero fields are written too

  m.set_step(8);
  ASSERT_TRUE(WriteManifest(dir, m).ok());
  EXPECT_EQ(ReadManifest(dir)->step(), 8);
}

TEST_F(ManifestTest, AnAbsentManifestIsNotFoundAndAnUnreadableOneDataLoss) {
  const std::string dir = FreshDir("step-000000007");
  absl::StatusOr<v1::CheckpointManifest> absent = ReadManifest(dir);
  EXPECT_EQ(absent.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(absent.status().message(), HasSubstr("not committed"));
  std::ofstream(dir + "/MANIFEST.json") << "{\"step\": ";
  absl::StatusOr<v1::CheckpointManifest> broken = ReadManifest(dir);
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(broken.status().message(), HasSubstr(dir + "/MANIFEST.json"));
}

TEST_F(ManifestTest, UnknownFieldsFromANewerWriterAreIgnored) {
  const std::string dir = FreshDir("step-000000007");
  std::ofstream(dir + "/MANIFEST.json") << R"({"jobId": "j", "step": "7", "futureField": 1})";
  absl::StatusOr<v1::CheckpointManifest> m = ReadManifest(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->step(), 7);
}

class VerifyCheckpointTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    root_ = FreshDir("root");
    manifest_ = WriteCheckpoint(root_, 12, 2);
    dir_ = CheckpointDir(root_, 12);
    part1_ = dir_ + "/rank-00001.bin";
  }

  std::string root_, dir_, part1_;
  v1::CheckpointManifest manifest_;
};

TEST_F(VerifyCheckpointTest, AcceptsACompleteCheckpoint) { EXPECT_TRUE(VerifyCheckpoint(dir_).ok()); }

TEST_F(VerifyCheckpointTest, AFlippedByteNamesThePart) {
  FlipByte(part1_, 100);
  absl::Status s = VerifyCheckpoint(dir_);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(part1_));
  EXPECT_THAT(s.message(), HasSubstr("differs from the manifest"));
}

TEST_F(VerifyCheckpointTest, ATruncatedPartNamesThePart) {
  std::filesystem::resize_file(part1_, std::filesystem::file_size(part1_) - 1);
  absl::Status s = VerifyCheckpoint(dir_);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(part1_));
  EXPECT_THAT(s.message(), HasSubstr("the manifest says"));
}

TEST_F(VerifyCheckpointTest, AMissingPartNamesThePart) {
  std::filesystem::remove(part1_);
  absl::Status s = VerifyCheckpoint(dir_);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(part1_));
  EXPECT_THAT(s.message(), HasSubstr("missing"));
}

// A part replaced by a link to a file elsewhere (outside the roots a job may read) with the same
// bytes: neither verifying nor reading the checkpoint follows it.
TEST_F(VerifyCheckpointTest, APartThatIsASymbolicLinkIsNeverFollowed) {
  const std::string elsewhere = FreshDir("elsewhere") + "/rank-00001.bin";
  std::filesystem::rename(part1_, elsewhere);
  std::filesystem::create_symlink(elsewhere, part1_);
  EXPECT_THAT(VerifyCheckpoint(dir_).message(), HasSubstr("symbolic link"));
  const absl::StatusOr<RankState> read = ReadRankPart(dir_, manifest_.parts(1));
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(read.status().message(), HasSubstr("symbolic link"));
}

// A fifo in a part's place, or named as a file to read, is refused at once: opening one for
// reading would wait for a writer that never comes, and every rank reading it would hang.
TEST_F(VerifyCheckpointTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  std::filesystem::remove(part1_);
  ASSERT_EQ(::mkfifo(part1_.c_str(), 0600), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const bool refused = !VerifyCheckpoint(dir_).ok() && !ReadRankPart(dir_, manifest_.parts(1)).ok() &&
                         absl::IsFailedPrecondition(LoadWeights(part1_).status());
    ::_exit(refused ? 0 : 1);
  }
  int status = 0;
  for (int waited = 0; waited < 100 && ::waitpid(pid, &status, WNOHANG) == 0; ++waited) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  if (::waitpid(pid, &status, WNOHANG) == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "reading a fifo hung";
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(VerifyCheckpointTest, AManifestThatMissesARankIsDataLoss) {
  manifest_.mutable_parts()->RemoveLast();
  ASSERT_TRUE(WriteManifest(dir_, manifest_).ok());
  absl::Status s = VerifyCheckpoint(dir_);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("do not cover ranks 0..1"));
}

TEST_F(VerifyCheckpointTest, WithoutAManifestTheCheckpointIsUncommitted) {
  std::filesystem::remove(dir_ + "/MANIFEST.json");
  EXPECT_EQ(VerifyCheckpoint(dir_).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gradsync::ckpt

// CheckpointVerifier over real checkpoint files: verdicts reached on its own thread, kept while
// the files stay as they were, reached again when they change or a new epoch begins, and a
// missing directory judged once rather than over and over.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "absl/time/clock.h"
#include "checkpoint_verifier.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

namespace fs = std::filesystem;
using Verdict = CheckpointVerifier::Verdict;

class CheckpointVerifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::path(::testing::TempDir()) / ("verifier-" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    ckpt::RankState s;
    s.layout.Add("w", {4}, true);
    s.params = {1, 2, 3, 4};
    s.adam_m = s.adam_v = {0, 0, 0, 0};
    v1::CheckpointManifest m;
    m.set_world_size(1);
    absl::StatusOr<v1::CheckpointPart> part = ckpt::WriteRankPart(dir_, s);
    ASSERT_TRUE(part.ok()) << part.status();
    *m.add_parts() = *part;
    ASSERT_TRUE(ckpt::WriteManifest(dir_, m).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Checks until the verdict is in (the verifier's thread hashes the files meanwhile).
  CheckpointVerifier::Result Await(CheckpointVerifier& v, const std::string& dir, int64_t epoch) {
    CheckpointVerifier::Result r = v.Check(dir, epoch);
    for (const absl::Time deadline = absl::Now() + absl::Seconds(10);
         r.verdict == Verdict::kPending && absl::Now() < deadline; r = v.Check(dir, epoch)) {
      absl::SleepFor(absl::Milliseconds(2));
    }
    return r;
  }

  std::string dir_;
  std::atomic<int> verdicts_{0};
};

TEST_F(CheckpointVerifierTest, AVerdictHoldsUntilTheFilesOrTheEpochChange) {
  CheckpointVerifier v([this] { ++verdicts_; });
  EXPECT_EQ(v.Check(dir_, 0).verdict, Verdict::kPending) << "nothing known yet: verified on its thread";
  EXPECT_EQ(Await(v, dir_, 0).verdict, Verdict::kVerified);
  const int reached = verdicts_.load();
  EXPECT_GE(reached, 1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(v.Check(dir_, 0).verdict, Verdict::kVerified);
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(verdicts_.load(), reached) << "a known verdict is not reached again";

  // A byte changed in place: a new modification time, so verified again, and found corrupt.
  {
    std::fstream f(dir_ + "/" + ckpt::PartFileName(0), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x5a');
  }
  const CheckpointVerifier::Result corrupt = Await(v, dir_, 0);
  EXPECT_EQ(corrupt.verdict, Verdict::kCorrupt);
  EXPECT_NE(corrupt.status.message().find("checksum"), std::string::npos) << corrupt.status;

  // A later epoch (a restart) verifies again whatever is known.
  EXPECT_EQ(v.Check(dir_, 1).verdict, Verdict::kPending);
  EXPECT_EQ(Await(v, dir_, 1).verdict, Verdict::kCorrupt);
}

TEST_F(CheckpointVerifierTest, AMissingDirectoryIsJudgedOnce) {
  CheckpointVerifier v([this] { ++verdicts_; });
  const std::string gone = dir_ + "-gone";
  const CheckpointVerifier::Result r = Await(v, gone, 0);
  EXPECT_EQ(r.verdict, Verdict::kCorrupt);
  const int reached = verdicts_.load();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(v.Check(gone, 0).verdict, Verdict::kCorrupt);
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(verdicts_.load(), reached) << "no verification loop over a directory that is not there";
}

TEST_F(CheckpointVerifierTest, CheckNowVerifiesOnTheCallersThread) {
  CheckpointVerifier v([] {});
  v.Shutdown();  // no thread: only CheckNow can reach a verdict
  EXPECT_EQ(v.Check(dir_, 0).verdict, Verdict::kPending);
  EXPECT_EQ(v.CheckNow(dir_, 0).verdict, Verdict::kVerified);
  EXPECT_EQ(v.Check(dir_, 0).verdict, Verdict::kVerified);
}

}  // namespace
}  // namespace gradsync::coordinator

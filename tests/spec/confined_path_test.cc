// ConfinedRoots and the spec's path fields on real directories and symlinks: every way out of a
// root (an absolute path, "..", a symlink, a glob that matches ".." or a symlink) is refused with
// the field, the path and the root named, and the refusal never quotes a file's contents.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gradsync/spec/confined_path.h"
#include "gradsync/spec/job_paths.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"

namespace gradsync::spec {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSecret[] = "root:$6$not-for-your-eyes";

class ConfinedPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::weakly_canonical(fs::path(::testing::TempDir()) / ("confined-" + std::to_string(::getpid())));
    fs::remove_all(base_);
    fs::create_directories(root() / "corpus");
    fs::create_directories(outside());
    std::ofstream(root() / "corpus" / "a.txt") << "inside";
    std::ofstream(outside() / "shadow") << kSecret;
  }
  void TearDown() override { fs::remove_all(base_); }

  fs::path root() const { return base_ / "data"; }
  fs::path outside() const { return base_ / "etc"; }
  ConfinedRoots Roots() const { return *ConfinedRoots::Open({root().string()}, "data root"); }

  // The message of a refusal, which must be INVALID_ARGUMENT.
  std::string Refusal(const std::string& path) const {
    absl::StatusOr<std::string> r = Roots().Resolve("data.text.paths[0]", path);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << path << " resolved to " << r.value_or("");
    EXPECT_THAT(std::string(r.status().message()), Not(HasSubstr(kSecret)));
    return std::string(r.status().message());
  }

  fs::path base_;
};

TEST_F(ConfinedPathTest, RelativePathsStartAtTheFirstRoot) {
  EXPECT_EQ(*Roots().Resolve("f", "corpus/a.txt"), (root() / "corpus/a.txt").string());
  EXPECT_EQ(*Roots().Resolve("f", "./corpus/./a.txt"), (root() / "corpus/a.txt").string());
  EXPECT_EQ(*Roots().Resolve("f", "corpus/*.txt"), (root() / "corpus/*.txt").string());
  EXPECT_EQ(*Roots().Resolve("f", "later/train_*.bin"), (root() / "later/train_*.bin").string())
      << "files that do not exist yet may be named";
  EXPECT_EQ(*Roots().Resolve("f", (root() / "corpus/../corpus/a.txt").string()), (root() / "corpus/a.txt").string())
      << "\"..\" that stays inside is fine where it exists";
}

TEST_F(ConfinedPathTest, AnAbsolutePathOutsideIsRefusedNamingFieldPathAndRoot) {
  const std::string shadow = (outside() / "shadow").string();
  const std::string message = Refusal(shadow);
  EXPECT_THAT(message,
              HasSubstr("data.text.paths[0]: \"" + shadow + "\" lies outside the data root " + root().string()));
  Refusal("/etc/shadow");
  Refusal("/");
}

TEST_F(ConfinedPathTest, DotDotCannotClimbOut) {
  EXPECT_THAT(Refusal("../etc/shadow"), HasSubstr("lies outside"));
  EXPECT_THAT(Refusal("corpus/../../etc/shadow"), HasSubstr("lies outside"));
  // Past what exists the kernel's answer is unknown (a missing directory may become a symlink).
  EXPECT_THAT(Refusal("missing/../../etc/shadow"), HasSubstr("climbs"));
  EXPECT_THAT(Refusal("missing/.."), HasSubstr("climbs"));
}

TEST_F(ConfinedPathTest, GlobsThatCanMatchDotDotAreRefused) {
  for (const char* glob : {".*/etc/shadow", "corpus/.?/../etc/shadow", "\\.\\./etc/shadow", ".[.]/etc/shadow"}) {
    EXPECT_THAT(Refusal(glob), HasSubstr("climbs")) << glob;
  }
  EXPECT_TRUE(Roots().Resolve("f", "corpus/*.txt").ok());
  EXPECT_TRUE(Roots().Resolve("f", "corpus/?.txt").ok()) << "'?' cannot match a leading '.'";
}

TEST_F(ConfinedPathTest, ASymlinkOutOfTheRootIsRefused) {
  fs::create_directory_symlink(outside(), root() / "escape");
  fs::create_symlink(outside() / "shadow", root() / "corpus" / "shadow.txt");
  EXPECT_THAT(Refusal("escape/shadow"), HasSubstr("lies outside"));
  EXPECT_THAT(Refusal("corpus/shadow.txt"), HasSubstr("lies outside"));
  EXPECT_THAT(Refusal("escape/missing/*.bin"), HasSubstr("lies outside"));
}

TEST_F(ConfinedPathTest, ASymlinkThatStaysInsideIsFollowed) {
  fs::create_directory_symlink(root() / "corpus", root() / "latest");
  EXPECT_EQ(*Roots().Resolve("f", "latest/a.txt"), (root() / "corpus/a.txt").string());
}

TEST_F(ConfinedPathTest, GlobMatchesThatLeadOutAreRefusedByName) {
  fs::create_symlink(outside() / "shadow", root() / "corpus" / "b.txt");
  const std::string pattern = (root() / "corpus/*.txt").string();
  const absl::Status s = Roots().CheckMatches("data.text.paths[0]", pattern);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("data.text.paths[0]: \"" + pattern + "\" matches \"" + (root() / "corpus/b.txt").string() +
                        "\", which resolves outside the data root"));
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr(kSecret)));
  EXPECT_TRUE(Roots().CheckMatches("f", (root() / "corpus/a*.txt").string()).ok());
  EXPECT_TRUE(Roots().CheckMatches("f", (root() / "none/*.bin").string()).ok()) << "no match is the reader's error";
}

TEST_F(ConfinedPathTest, APathMayLieInAnyOfSeveralRoots) {
  const ConfinedRoots roots = *ConfinedRoots::Open({root().string(), outside().string()}, "data root");
  EXPECT_EQ(*roots.Resolve("f", (outside() / "shadow").string()), (outside() / "shadow").string());
  EXPECT_EQ(*roots.Resolve("f", "corpus/a.txt"), (root() / "corpus/a.txt").string());
  EXPECT_EQ(roots.Describe(), "the data roots " + root().string() + ", " + outside().string());
  EXPECT_EQ(ConfinedRoots::Open({}, "data root").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ConfinedRoots::Open({""}, "data root").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ConfinedPathTest, ARootReachedThroughASymlinkConfinesByWhereItLeads) {
  fs::create_directory_symlink(root(), base_ / "data-link");
  const ConfinedRoots roots = *ConfinedRoots::Open({(base_ / "data-link/").string()}, "data root");
  EXPECT_EQ(roots.dirs().front(), root().string());
  EXPECT_EQ(*roots.Resolve("f", (base_ / "data-link/corpus/a.txt").string()), (root() / "corpus/a.txt").string());
}

TEST(PathIsWithinTest, ComparesWholeComponents) {
  EXPECT_TRUE(PathIsWithin("/a/b", "/a/b"));
  EXPECT_TRUE(PathIsWithin("/a/b/c", "/a/b"));
  EXPECT_FALSE(PathIsWithin("/a/bc", "/a/b"));
  EXPECT_FALSE(PathIsWithin("/a", "/a/b"));
  EXPECT_TRUE(PathIsWithin("/x", "/"));
}

TEST_F(ConfinedPathTest, ConfineDataPathsRewritesEveryPathOrNone) {
  v1::JobSpec spec;
  spec.mutable_data()->mutable_shards()->add_paths("corpus/*.bin");
  spec.mutable_data()->mutable_shards()->add_paths((root() / "corpus/a.txt").string());
  ASSERT_TRUE(ConfineDataPaths(Roots(), &spec).ok());
  EXPECT_EQ(spec.data().shards().paths(0), (root() / "corpus/*.bin").string());

  v1::JobSpec bad;
  bad.mutable_data()->mutable_text()->add_paths("corpus/a.txt");
  bad.mutable_data()->mutable_text()->add_paths("../etc/shadow");
  const absl::Status s = ConfineDataPaths(Roots(), &bad);
  EXPECT_THAT(std::string(s.message()), HasSubstr("data.text.paths[1]: \"../etc/shadow\" lies outside"));
  EXPECT_EQ(bad.data().text().paths(0), "corpus/a.txt");

  v1::JobSpec synthetic;
  synthetic.mutable_data()->mutable_synthetic();
  EXPECT_TRUE(ConfineDataPaths(Roots(), &synthetic).ok());
}

TEST_F(ConfinedPathTest, InitFromResolvesInsideTheRootsOrIsRefused) {
  v1::JobSpec spec;
  spec.mutable_model()->set_init_from("corpus/a.txt");
  ASSERT_TRUE(ConfineInitFrom(Roots(), &spec).ok());
  EXPECT_EQ(spec.model().init_from(), (root() / "corpus/a.txt").string());
  EXPECT_TRUE(CheckInitFrom(spec.model(), Roots()).ok());

  v1::JobSpec bad;
  bad.mutable_model()->set_init_from((outside() / "shadow").string());
  const absl::Status s = ConfineInitFrom(Roots(), &bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("model.initFrom: \""));
  EXPECT_THAT(std::string(s.message()), HasSubstr("lies outside"));
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr(kSecret)));
  EXPECT_EQ(bad.model().init_from(), (outside() / "shadow").string());
  // A link placed after submission is caught where the worker reads.
  fs::create_symlink(outside() / "shadow", root() / "corpus" / "later.bin");
  v1::JobSpec late;
  late.mutable_model()->set_init_from((root() / "corpus" / "later.bin").string());
  EXPECT_THAT(std::string(CheckInitFrom(late.model(), Roots()).message()), HasSubstr("model.initFrom"));
  v1::JobSpec none;
  EXPECT_TRUE(ConfineInitFrom(Roots(), &none).ok());
}

TEST(CheckpointDirTest, IsAtMostASubdirectoryName) {
  for (const char* ok : {"", "run-1", "v2.final", "A_b"}) EXPECT_TRUE(IsCheckpointSubdir(ok)) << ok;
  for (const std::string& bad : std::vector<std::string>{"/etc/x", "../..", "..", ".", ".hidden", "a/b",
                                                         "other-job/../x", std::string(65, 'a'), "a b"}) {
    EXPECT_FALSE(IsCheckpointSubdir(bad)) << bad;
  }
  v1::JobSpec spec;
  FillDefaults(&spec);
  spec.mutable_checkpoint()->set_dir("/etc/x");
  const absl::Status s = ValidateJobSpec(spec);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("checkpoint.dir: must be the name of a subdirectory"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("got \"/etc/x\""));
  // Another job's directory is no place to write; its weights are reached through model.initFrom.
  spec.mutable_checkpoint()->set_dir("/var/lib/gradsync/artifacts/tiny-1a2b3");
  EXPECT_THAT(std::string(ValidateJobSpec(spec).message()), HasSubstr("name it in model.initFrom"));
}

}  // namespace
}  // namespace gradsync::spec

// The spec's validation fields: training.evalEvery's default and bounds, data.validation's rules at
// submission, and the val_*.bin shards found beside train_* shards (real directories, confined to
// the data roots like every other data path).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gradsync/spec/confined_path.h"
#include "gradsync/spec/job_paths.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"

namespace gradsync::spec {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

v1::JobSpec TinyShardsSpec(const std::string& train) {
  v1::JobSpec spec;
  spec.mutable_model()->set_preset("gpt-tiny");
  spec.mutable_data()->mutable_shards()->add_paths(train);
  FillDefaults(&spec);
  return spec;
}

std::string ValidationError(const v1::JobSpec& spec) {
  const absl::Status s = ValidateJobSpec(spec);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  return std::string(s.message());
}

TEST(EvalEveryTest, DefaultsTo100AndKeepsAnExplicitZero) {
  v1::JobSpec spec;
  FillDefaults(&spec);
  ASSERT_TRUE(spec.training().has_eval_every());
  EXPECT_EQ(spec.training().eval_every(), 100);

  v1::JobSpec at_end;
  at_end.mutable_training()->set_eval_every(0);
  FillDefaults(&at_end);
  EXPECT_EQ(at_end.training().eval_every(), 0) << "0 means after the last step only, not unset";

  absl::StatusOr<v1::JobSpec> parsed = ParseJobSpec("training: {evalEvery: 0}", "job.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->training().has_eval_every());

  v1::JobSpec negative = TinyShardsSpec("d/train_*.bin");
  negative.mutable_training()->set_eval_every(-1);
  EXPECT_THAT(ValidationError(negative), HasSubstr("training.evalEvery: must be at least 0, got -1"));
}

TEST(ValidationDataTest, RefusesWhatCannotBeValidated) {
  v1::JobSpec ok = TinyShardsSpec("d/train_*.bin");
  ok.mutable_data()->mutable_validation()->add_paths("d/val_*.bin");
  EXPECT_TRUE(ValidateJobSpec(ok).ok());

  v1::JobSpec empty_path = ok;
  empty_path.mutable_data()->mutable_validation()->add_paths("");
  EXPECT_THAT(ValidationError(empty_path), HasSubstr("data.validation.paths[1]: must not be empty"));

  v1::JobSpec contradiction = ok;
  contradiction.mutable_data()->mutable_validation()->set_disabled(true);
  EXPECT_THAT(ValidationError(contradiction),
              HasSubstr("data.validation.disabled: must be false when data.validation.paths names shards"));

  v1::JobSpec mlp;
  mlp.mutable_data()->mutable_validation()->add_paths("d/val_*.bin");
  FillDefaults(&mlp);
  EXPECT_THAT(ValidationError(mlp), HasSubstr("data.validation: validation shards hold tokens"));

  v1::JobSpec off = TinyShardsSpec("d/train_*.bin");
  off.mutable_data()->mutable_validation()->set_disabled(true);
  EXPECT_TRUE(ValidateJobSpec(off).ok());
}

class DefaultValidationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::weakly_canonical(fs::path(::testing::TempDir()) / ("val-spec-" + std::to_string(::getpid())));
    fs::remove_all(base_);
    fs::create_directories(root() / "prepared");
    fs::create_directories(root() / "trainonly");
    fs::create_directories(base_ / "outside");
    for (const char* name : {"prepared/train_000000.bin", "prepared/val_000000.bin", "trainonly/train_000000.bin"}) {
      std::ofstream(root() / name) << "x";
    }
  }
  void TearDown() override { fs::remove_all(base_); }

  fs::path root() const { return base_ / "data"; }
  ConfinedRoots Roots() const { return *ConfinedRoots::Open({root().string()}, "data root"); }

  fs::path base_;
};

TEST_F(DefaultValidationTest, FindsValShardsBesideTrainShardsAtSubmission) {
  v1::JobSpec spec = TinyShardsSpec("prepared/train_*.bin");
  ASSERT_TRUE(ConfineDataPaths(Roots(), &spec).ok());
  EXPECT_THAT(spec.data().validation().paths(), ElementsAre((root() / "prepared/val_*.bin").string()))
      << "the job as stored names the shards it validates on";

  v1::JobSpec one_file = TinyShardsSpec("prepared/train_000000.bin");
  ASSERT_TRUE(ConfineDataPaths(Roots(), &one_file).ok());
  EXPECT_EQ(one_file.data().validation().paths_size(), 1);
}

TEST_F(DefaultValidationTest, FindsNothingWhereTheRuleDoesNotApply) {
  v1::JobSpec no_val = TinyShardsSpec("trainonly/train_*.bin");
  ASSERT_TRUE(ConfineDataPaths(Roots(), &no_val).ok());
  EXPECT_THAT(no_val.data().validation().paths(), IsEmpty()) << "no val_*.bin beside the train shards";

  v1::JobSpec not_train = TinyShardsSpec("prepared/*.bin");
  EXPECT_THAT(DefaultValidationPaths(not_train), IsEmpty()) << "only paths named train_* lead to val shards";

  v1::JobSpec off = TinyShardsSpec((root() / "prepared/train_*.bin").string());
  off.mutable_data()->mutable_validation()->set_disabled(true);
  ASSERT_TRUE(ConfineDataPaths(Roots(), &off).ok());
  EXPECT_THAT(off.data().validation().paths(), IsEmpty()) << "data.validation.disabled turns the rule off";

  v1::JobSpec explicit_paths = TinyShardsSpec("prepared/train_*.bin");
  explicit_paths.mutable_data()->mutable_validation()->add_paths("trainonly/train_000000.bin");
  ASSERT_TRUE(ConfineDataPaths(Roots(), &explicit_paths).ok());
  EXPECT_THAT(explicit_paths.data().validation().paths(), ElementsAre((root() / "trainonly/train_000000.bin").string()))
      << "named shards replace the default and are resolved like the training paths";
}

TEST_F(DefaultValidationTest, ValidationPathsAreConfinedLikeTrainingPaths) {
  v1::JobSpec outside = TinyShardsSpec("prepared/train_*.bin");
  outside.mutable_data()->mutable_validation()->add_paths((base_ / "outside/val.bin").string());
  const absl::Status s = ConfineDataPaths(Roots(), &outside);
  EXPECT_THAT(std::string(s.message()), HasSubstr("data.validation.paths[0]"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("lies outside the data root"));

  // A found shard that is a symlink out of the root is refused like a matched training file.
  std::ofstream(base_ / "outside/secret") << "s";
  fs::create_symlink(base_ / "outside/secret", root() / "prepared/val_000001.bin");
  v1::JobSpec found = TinyShardsSpec("prepared/train_*.bin");
  const absl::Status link = ConfineDataPaths(Roots(), &found);
  EXPECT_EQ(link.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(link.message()), HasSubstr("data.validation.paths[0]"));
  EXPECT_THAT(found.data().validation().paths(), IsEmpty()) << "the spec is unchanged on error";

  v1::JobSpec listed = TinyShardsSpec("prepared/train_*.bin");
  listed.mutable_data()->mutable_validation()->add_paths("prepared/val_000000.bin");
  EXPECT_THAT(DataPaths(listed), ::testing::SizeIs(2));
  EXPECT_EQ(DataPaths(listed)[1].field, "data.validation.paths[0]");
}

}  // namespace
}  // namespace gradsync::spec

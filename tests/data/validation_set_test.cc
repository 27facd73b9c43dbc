// ValidationSet: every target position of every file once, short last windows padded with ignored
// targets that change no real position's loss (both flavours), and the refusals naming the field
// and the file.
#include "gradsync/data/validation_set.h"

#include <unistd.h>

#include <filesystem>
#include <map>
#include <vector>

#include "gmock/gmock.h"
#include "gradsync/core/rng.h"
#include "gradsync/data/token_shard.h"
#include "gradsync/kernels/cpu/softmax_xent.h"
#include "gtest/gtest.h"
#include "plans.h"
#include "transformer_util.h"

namespace gradsync::data {
namespace {

using ::testing::HasSubstr;

class ValidationSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) /
        ("val-" + std::to_string(::getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::vector<uint16_t>& tokens) const {
    const std::string path = (dir_ / name).string();
    EXPECT_TRUE(WriteShard(path, tokens).ok());
    return path;
  }
  static std::vector<uint16_t> Stream(int64_t n, int vocab, uint64_t seed) {
    Rng rng(seed);
    std::vector<uint16_t> out(n);
    for (auto& t : out) t = static_cast<uint16_t>(rng.Below(vocab));
    return out;
  }

  std::filesystem::path dir_;
};

// A uint32 shard (a vocabulary past 65,536) is scored on its own ids, not their low 16 bits.
TEST_F(ValidationSetTest, Uint32ShardsKeepTheirWideIds) {
  const std::vector<uint32_t> tokens = {151935, 70000, 65536, 2, 100000};
  const std::string path = (dir_ / "val_wide.bin").string();
  ASSERT_TRUE(WriteShard(path, tokens).ok());
  auto set = ValidationSet::Load({path}, 3, 151936);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ((*set)->windows(), 2);
  nn::Batch batch;
  ASSERT_TRUE((*set)->Fill(0, 2, &batch).ok());
  EXPECT_EQ(batch.tokens, std::vector<int32_t>({151935, 70000, 65536, 2, 0, 0}));
  EXPECT_EQ(batch.targets,
            std::vector<int32_t>({70000, 65536, 2, 100000, kernels::cpu::kIgnoreIndex, kernels::cpu::kIgnoreIndex}));
}

TEST_F(ValidationSetTest, EveryTargetPositionOnceWithItsInput) {
  // Files of 11 (10 targets: two full windows of 5), 7 (6 targets: one full, one of 1) and 2 tokens.
  const std::vector<std::vector<uint16_t>> files = {Stream(11, 7, 1), Stream(7, 7, 2), Stream(2, 7, 3)};
  std::vector<std::string> paths;
  for (size_t f = 0; f < files.size(); ++f) paths.push_back(Write("val_" + std::to_string(f) + ".bin", files[f]));
  auto set = ValidationSet::Load(paths, 5, 7);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ((*set)->windows(), 2 + 2 + 1);
  EXPECT_EQ((*set)->targets(), 10 + 6 + 1);

  nn::Batch batch;
  ASSERT_TRUE((*set)->Fill(0, (*set)->windows(), &batch).ok());
  ASSERT_EQ(batch.size, 5);
  // Each counted (input, target) pair, in order, must be exactly the files' consecutive pairs.
  std::vector<std::pair<int32_t, int32_t>> got, want;
  for (size_t i = 0; i < batch.targets.size(); ++i) {
    if (batch.targets[i] != kernels::cpu::kIgnoreIndex) got.emplace_back(batch.tokens[i], batch.targets[i]);
  }
  for (const auto& f : files) {
    for (size_t i = 0; i + 1 < f.size(); ++i) want.emplace_back(f[i], f[i + 1]);
  }
  EXPECT_EQ(got, want);

  nn::Batch one;
  ASSERT_TRUE((*set)->Fill(3, 1, &one).ok());
  EXPECT_EQ(one.tokens, std::vector<int32_t>({files[1][5], 0, 0, 0, 0}));
  EXPECT_EQ(one.targets[0], files[1][6]);
}

class PaddingIsHarmless : public ValidationSetTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(PaddingIsHarmless, AShortWindowScoresAsTheSameTokensWithoutPadding) {
  const v1::JobSpec spec = nn::testing::TinySpec(GetParam());
  std::unique_ptr<nn::Model> model = nn::testing::MustCreate(spec);
  ASSERT_NE(model, nullptr);
  model->InitParams(7);
  const std::vector<uint16_t> tokens = Stream(9, 7, 4);  // windows of 5 targets, then 3
  auto set = ValidationSet::Load({Write("v.bin", tokens)}, 5, 7);
  ASSERT_TRUE(set.ok()) << set.status();
  nn::Batch padded;
  ASSERT_TRUE((*set)->Fill(1, 1, &padded).ok());
  nn::Batch bare;
  bare.size = 1;
  for (int t = 0; t < 3; ++t) {
    bare.tokens.push_back(tokens[5 + t]);
    bare.targets.push_back(tokens[6 + t]);
  }
  absl::StatusOr<nn::LossSum> a = model->Evaluate(padded), b = model->Evaluate(bare);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->count, 3);
  EXPECT_NEAR(a->sum, b->sum, 1e-5 * b->sum) << "the causal model lets no padding reach a real position";
}

INSTANTIATE_TEST_SUITE_P(Flavours, PaddingIsHarmless, ::testing::Values("gpt2", "llama"));

TEST_F(ValidationSetTest, RefusalsNameTheFieldAndTheFile) {
  v1::JobSpec spec = nn::testing::TinySpec("gpt2");
  spec.mutable_data()->mutable_shards()->add_paths("train.bin");  // planned, never read here
  EXPECT_EQ(*gradsync::testing::ValidationSetOf(spec), nullptr) << "no paths: no validation";
  spec.mutable_data()->mutable_validation()->add_paths(Write("one.bin", {3}));
  absl::StatusOr<std::unique_ptr<ValidationSet>> one = gradsync::testing::ValidationSetOf(spec);
  EXPECT_EQ(one.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(one.status().message()), HasSubstr("data.validation: "));
  EXPECT_THAT(std::string(one.status().message()), HasSubstr("one.bin: holds no token to predict"));

  // Streamed: a token is checked against the vocabulary when a window reads it.
  spec.mutable_data()->mutable_validation()->set_paths(0, Write("big.bin", {3, 9}));
  absl::StatusOr<std::unique_ptr<ValidationSet>> big = gradsync::testing::ValidationSetOf(spec);
  ASSERT_TRUE(big.ok()) << big.status();
  nn::Batch batch;
  EXPECT_THAT(std::string((*big)->Fill(0, 1, &batch).message()), HasSubstr("big.bin: holds a token outside the vocabulary of 7"));
  spec.mutable_data()->mutable_validation()->set_paths(0, (dir_ / "none_*.bin").string());
  EXPECT_THAT(std::string(gradsync::testing::ValidationSetOf(spec).status().message()), HasSubstr("matches no file"));
  spec.mutable_data()->mutable_validation()->set_disabled(true);
  EXPECT_EQ(*gradsync::testing::ValidationSetOf(spec), nullptr);
}

}  // namespace
}  // namespace gradsync::data

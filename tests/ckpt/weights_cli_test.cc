// `gradsync generate`, `export` and `checkpoint inspect | diff` on weights files and committed
// checkpoint directories, run in-process against real files.
#include <filesystem>

#include "ckpt_test_util.h"
#include "commands.h"
#include "gmock/gmock.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/ckpt/interchange.h"
#include "gtest/gtest.h"

namespace gradsync::ckpt {
namespace {

using ::testing::HasSubstr;

struct Result {
  int code = -1;
  std::string out, err;
};

template <typename Command>
Result Cli(Command command, const std::vector<std::string>& argv) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  Result r;
  r.code = command(argv);
  r.out = ::testing::internal::GetCapturedStdout();
  r.err = ::testing::internal::GetCapturedStderr();
  return r;
}

class WeightsCliTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    WeightsFile w;
    w.model.set_preset("gpt-tiny");
    v1::TransformerConfig& t = *w.model.mutable_transformer();
    t.set_layers(1);
    t.set_width(16);
    t.set_heads(2);
    t.set_mlp_width(64);
    t.set_seq_len(8);
    absl::StatusOr<nn::ParamLayout> layout = TransformerLayout(w.model);
    ASSERT_TRUE(layout.ok()) << layout.status();
    w.layout = *layout;
    for (int64_t i = 0; i < layout->total_numel(); ++i) w.values.push_back(static_cast<float>(i % 17) * 0.01f);
    weights_ = FreshDir("w") + "/weights.bin";
    ASSERT_TRUE(SaveWeights(weights_, w.model, w.layout, w.values).ok());
    RankState s;
    s.model = w.model;
    s.layout = w.layout;
    s.params = w.values;
    s.step = 3;
    dir_ = CheckpointDir(FreshDir("root"), 3);
    absl::StatusOr<v1::CheckpointPart> part = WriteRankPart(dir_, s);
    ASSERT_TRUE(part.ok()) << part.status();
    v1::CheckpointManifest m;
    m.set_step(3);
    m.set_world_size(1);
    *m.add_parts() = *part;
    ASSERT_TRUE(WriteManifest(dir_, m).ok());
  }

  std::string weights_, dir_;
};

// Before: the weights reader streamed the directory and generate died of an uncaught
// std::__ios_failure (exit 134).
TEST_F(WeightsCliTest, GenerateReadsACommittedCheckpointDirectory) {
  const Result r =
      Cli(cli::GenerateCommand, {"--weights", dir_, "--prompt", "ab", "--tokens", "3", "--temperature", "0"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 2), "ab");
  const Result missing = Cli(cli::GenerateCommand, {"--weights", FreshDir("empty"), "--prompt", "ab"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("neither MANIFEST.json"));
}

TEST_F(WeightsCliTest, ExportWritesACheckpointAsSafetensorsAndLlmc) {
  const std::string out = FreshDir("out");
  Result r = Cli(cli::ExportCommand, {dir_, "--format", "hf", "-o", out + "/hf"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(out + "/hf/model.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(out + "/hf/config.json"));
  r = Cli(cli::ExportCommand, {weights_, "--format", "llmc", "-o", out + "/m.bin"});
  EXPECT_EQ(r.code, 0) << r.err;
  r = Cli(cli::ExportCommand, {weights_, "--format", "onnx", "-o", out + "/x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--format: must be one of hf, gradsync, llmc"));
  // Inspect and diff read the exports and the weights file as they read checkpoints.
  r = Cli(cli::CheckpointCommand, {"inspect", out + "/hf"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("blocks.0.attn.qkv.weight"));
  r = Cli(cli::CheckpointCommand, {"diff", weights_, out + "/m.bin"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(16 of 16 tensors identical)"));
}

TEST_F(WeightsCliTest, InspectAndDiffAcceptAWeightsFile) {
  Result r = Cli(cli::CheckpointCommand, {"inspect", weights_});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("weights " + weights_));
  EXPECT_THAT(r.out, HasSubstr("wte"));
  r = Cli(cli::CheckpointCommand, {"diff", dir_, weights_});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(16 of 16 tensors identical)"));
}

}  // namespace
}  // namespace gradsync::ckpt

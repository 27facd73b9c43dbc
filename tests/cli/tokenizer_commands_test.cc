// `data prepare --tokenizer` and `generate --tokenizer` with a small tokenizer.json written
// here, run as the CLI runs them; and a job's datasets refusing shards whose recorded
// vocabulary is not the model's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "commands.h"
#include "gradsync/ckpt/weights_file.h"
#include "gradsync/data/shards_info.h"
#include "gradsync/data/token_dataset.h"
#include "gradsync/data/token_shard.h"
#include "gradsync/nn/model.h"
#include "gradsync/tokenizer/tokenizer.h"
#include "plans.h"
#include "tokenizer_json.h"

namespace gradsync::cli {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

using testing::TokenizerJson;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class TokenizerCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / absl::StrCat("tokenizer_commands_test_", ::getpid(), "_",
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name, std::ios::binary) << content;
    return (dir_ / name).string();
  }

  // A gpt2-flavour transformer of vocabulary `vocab`, saved as a weights file. With `always` >=
  // 0 every parameter is zero but lnf.bias[0] = 1 and wte[always][0] = 10: whatever the input,
  // the final hidden state is e0 and the tied head gives `always` the only non-zero logit.
  std::string SaveModel(int vocab, int always = -1, const std::string& flavour = "gpt2") {
    v1::JobSpec spec;
    spec.mutable_model()->set_preset("gpt-tiny");
    v1::TransformerConfig* t = spec.mutable_model()->mutable_transformer();
    t->set_flavour(flavour);
    t->set_layers(1);
    t->set_heads(2);
    t->set_kv_heads(2);
    t->set_width(16);
    t->set_mlp_width(32);
    t->set_seq_len(8);
    t->set_vocab_size(vocab);
    absl::StatusOr<std::unique_ptr<nn::Model>> model = gradsync::testing::ModelOf(spec);
    EXPECT_TRUE(model.ok()) << model.status();
    if (always >= 0) {
      const nn::ParamLayout& layout = (*model)->layout();
      std::span<float> params = (*model)->params();
      std::fill(params.begin(), params.end(), 0.0f);
      for (int i = 0; i < layout.size(); ++i) {
        const nn::ParamInfo& p = layout.param(i);
        if (p.name == "lnf.bias") params[p.offset] = 1.0f;
        if (p.name == "wte") params[p.offset + static_cast<int64_t>(always) * 16] = 10.0f;
      }
    }
    const std::string path = (dir_ / absl::StrCat("weights_", vocab, "_", always, "_", flavour, ".bin")).string();
    EXPECT_TRUE(ckpt::SaveWeights(path, spec.model(), (*model)->layout(), (*model)->params()).ok());
    return path;
  }

  fs::path dir_;
};

TEST_F(TokenizerCommandsTest, DataPrepareWritesTheTokenizersIdsAndRecordsIt) {
  const std::string tokenizer = Write("tokenizer.json", TokenizerJson(258));
  const std::string text = "hello hello<|end|>" + std::string(40, 'x');
  const std::string input = Write("in.txt", text);
  const std::string out = (dir_ / "shards").string();
  ASSERT_EQ(DataCommand({"prepare", input, "-o", out, "--tokenizer", tokenizer}), 0);

  auto loaded = tokenizer::LoadTokenizer(tokenizer);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const std::vector<int32_t> want = *(*loaded)->Encode(text);
  absl::StatusOr<data::TokenStream> shard = data::ReadShard(out + "/train_000000.bin", 259);
  ASSERT_TRUE(shard.ok()) << shard.status();
  EXPECT_EQ(shard->width(), data::TokenWidth::kUint16);
  const std::vector<uint32_t> got = shard->ToVector();
  EXPECT_EQ(std::vector<int32_t>(got.begin(), got.end()), want);
  EXPECT_EQ(want[0], 256);  // "he", not bytes
  absl::StatusOr<std::optional<data::ShardsInfo>> info = data::ReadShardsInfo(out);
  ASSERT_TRUE(info.ok() && info->has_value()) << info.status();
  EXPECT_EQ((*info)->tokenizer_kind, "hf-tokenizer-json");
  EXPECT_EQ((*info)->vocab_size, 259);
  EXPECT_EQ(fs::path((*info)->tokenizer_path), fs::absolute(tokenizer));

  // A model of another vocabulary cannot train on these shards: the error names both sizes.
  absl::StatusOr<std::unique_ptr<data::TokenDataset>> mismatch =
      data::TokenDataset::Load({out + "/train_*.bin"}, /*shards=*/true, 8, 300);
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatch.status().message(), HasSubstr("vocabulary 259"));
  EXPECT_THAT(mismatch.status().message(), HasSubstr("the model's vocabulary is 300"));
  EXPECT_TRUE(data::TokenDataset::Load({out + "/train_*.bin"}, true, 8, 259).ok());
}

TEST_F(TokenizerCommandsTest, DataPrepareWritesUint32ShardsForVocabulariesBeyondUint16) {
  const std::string tokenizer = Write("tokenizer.json", TokenizerJson(70000));
  const std::string out = (dir_ / "shards").string();
  const std::string text = "hello<|end|>" + std::string(20, 'x');
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(DataCommand({"prepare", Write("in.txt", text), "-o", out, "--tokenizer", tokenizer}), 0);
  EXPECT_THAT(::testing::internal::GetCapturedStdout(), HasSubstr("train shard(s) of uint32 tokens"));
  absl::StatusOr<data::TokenStream> shard = data::ReadShard(out + "/train_000000.bin", 70001);
  ASSERT_TRUE(shard.ok()) << shard.status();
  EXPECT_EQ(shard->width(), data::TokenWidth::kUint32);
  const std::vector<uint32_t> got = shard->ToVector();
  const std::vector<int32_t> want = *(*tokenizer::LoadTokenizer(tokenizer))->Encode(text);
  EXPECT_EQ(std::vector<int32_t>(got.begin(), got.end()), want);
  EXPECT_EQ(want[3], 70000);  // he, ll, o, <|end|>: the wide id itself, not its low 16 bits
  EXPECT_EQ(std::filesystem::file_size(out + "/train_000000.bin"), 1024 + 4 * want.size());
}

TEST_F(TokenizerCommandsTest, GenerateRefusesAModelOfAnotherVocabularyNamingBothSizes) {
  const std::string tokenizer = Write("tokenizer.json", TokenizerJson(258));
  const std::string bytes_model = SaveModel(256);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(GenerateCommand({"--weights", bytes_model, "--prompt", "hello", "--tokenizer", tokenizer}), 1);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("the model's vocabulary has 256 tokens but the tokenizer " + tokenizer + " has 259"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(GenerateCommand({"--weights", SaveModel(259), "--prompt", "hello"}), 1);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("has 259 tokens but gradsync generate without --tokenizer"));
}

TEST_F(TokenizerCommandsTest, GenerateDecodesWithTheTokenizer) {
  const std::string tokenizer = Write("tokenizer.json", TokenizerJson(258));
  ::testing::internal::CaptureStdout();
  const int rc = GenerateCommand({"--weights", SaveModel(259, /*always=*/258), "--prompt", "hello", "--tokenizer",
                                  tokenizer, "--tokens", "3", "--temperature", "0"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0);
  // Id 258 is the added token: decoded by the tokenizer, not printed as a byte.
  EXPECT_EQ(out, "hello<|end|><|end|><|end|>\n");
}

// An hf export with its tokenizer: the files transformers' from_pretrained reads for the model and
// for AutoTokenizer, the bos/eos ids the tokenizer_config.json names, generation_config.json; and
// a llama's declared context.
TEST_F(TokenizerCommandsTest, AnHfExportCarriesItsTokenizerAndItsSpecialIds) {
  const std::string tokenizer = Write("tokenizer.json", TokenizerJson(258));
  Write("tokenizer_config.json", R"({"bos_token": "<|end|>", "eos_token": {"content": "<|end|>"}})");
  const std::string out = (dir_ / "hf").string();
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(ExportCommand({SaveModel(259), "--format", "hf", "-o", out, "--tokenizer", tokenizer}), 0);
  EXPECT_THAT(::testing::internal::GetCapturedStdout(), HasSubstr("with tokenizer.json, tokenizer_config.json"));
  for (const char* f : {"model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json",
                        "generation_config.json"}) {
    EXPECT_TRUE(fs::exists(fs::path(out) / f)) << f;
  }
  const std::string config = ReadText(fs::path(out) / "config.json");
  EXPECT_THAT(config, HasSubstr("\"bos_token_id\": 258"));
  EXPECT_THAT(config, HasSubstr("\"eos_token_id\": 258"));
  EXPECT_THAT(ReadText(fs::path(out) / "generation_config.json"), HasSubstr("\"eos_token_id\": 258"));
  EXPECT_EQ(ReadText(fs::path(out) / "tokenizer.json"), TokenizerJson(258));

  // A gpt2's positions are learned: nothing else to declare. A llama's context may be declared.
  EXPECT_EQ(ExportCommand({SaveModel(259), "--format", "hf", "-o", out, "--max-positions", "4096"}), 2);
  const std::string llama = (dir_ / "llama").string();
  ASSERT_EQ(ExportCommand({SaveModel(259, -1, "llama"), "--format", "hf", "-o", llama, "--max-positions", "4096"}), 0);
  EXPECT_THAT(ReadText(fs::path(llama) / "config.json"), HasSubstr("\"max_position_embeddings\": 4096"));
  EXPECT_EQ(ExportCommand({SaveModel(259, -1, "llama"), "--format", "hf", "-o", llama, "--max-positions", "4"}), 2)
      << "below the seqLen it trained at";
  // A tokenizer of more tokens than the model has ids is refused.
  EXPECT_EQ(ExportCommand({SaveModel(200), "--format", "hf", "-o", out, "--tokenizer", tokenizer}), 2);
}

// --shards DIR takes the tokenizer its shards.json names.
TEST_F(TokenizerCommandsTest, AnHfExportFindsTheTokenizerOfItsShards) {
  const std::string tokenizer = Write("tokenizer.json", TokenizerJson(258));
  ASSERT_TRUE(data::WriteShardsInfo(dir_.string(), {"hf-tokenizer-json", tokenizer, 259}).ok());
  const std::string out = (dir_ / "hf").string();
  ASSERT_EQ(ExportCommand({SaveModel(259), "--format", "hf", "-o", out, "--shards", dir_.string()}), 0);
  EXPECT_TRUE(fs::exists(fs::path(out) / "tokenizer.json"));
}

}  // namespace
}  // namespace gradsync::cli

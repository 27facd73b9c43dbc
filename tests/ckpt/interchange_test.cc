// Export and import of every interchange format (hf, gradsync, llmc) for both transformer
// flavours: round trips bit for bit, Hugging Face's layouts tensor by tensor, and mismatches
// named by tensor.
#include "gradsync/ckpt/interchange.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <map>

#include "ckpt_test_util.h"
#include "gmock/gmock.h"
#include "gradsync/ckpt/safetensors.h"
#include "gtest/gtest.h"

namespace gradsync::ckpt {
namespace {

using ::testing::HasSubstr;

v1::ModelSpec Tiny(const std::string& flavour, int kv_heads = 0) {
  v1::ModelSpec m;
  m.set_preset(flavour == "gpt2" ? "gpt-tiny" : "minimind-26m");
  v1::TransformerConfig& t = *m.mutable_transformer();
  t.set_flavour(flavour);
  t.set_layers(2);
  t.set_heads(4);
  t.set_kv_heads(kv_heads > 0 ? kv_heads : 4);
  t.set_width(16);
  t.set_mlp_width(64);
  t.set_seq_len(8);
  t.set_vocab_size(40);
  return m;
}

// Distinct values everywhere, so that any misplaced element shows.
WeightsFile Weights(const v1::ModelSpec& model) {
  absl::StatusOr<nn::ParamLayout> layout = TransformerLayout(model);
  EXPECT_TRUE(layout.ok()) << layout.status();
  WeightsFile w{model, *layout, std::vector<float>(layout->total_numel())};
  for (size_t i = 0; i < w.values.size(); ++i) w.values[i] = static_cast<float>(i) * 0.001f - 1.0f;
  return w;
}

class InterchangeTest : public testing::TempDirTest {};

TEST_F(InterchangeTest, EveryFormatRoundTripsBothFlavours) {
  struct Case {
    std::string flavour;
    int kv_heads;
    WeightsFormat format;
    std::string out;
  };
  const Case cases[] = {{"gpt2", 4, WeightsFormat::kHf, "hf"},
                        {"gpt2", 4, WeightsFormat::kGradsync, "gs"},
                        {"gpt2", 4, WeightsFormat::kLlmc, "m.bin"},
                        {"llama", 2, WeightsFormat::kHf, "hf"},
                        {"llama", 2, WeightsFormat::kGradsync, "gs"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flavour + " " + c.out);
    const WeightsFile w = Weights(Tiny(c.flavour, c.kv_heads));
    const std::string out = FreshDir("x") + "/" + c.out;
    ASSERT_TRUE(ExportWeights(w, c.format, out).ok());
    absl::StatusOr<ImportedWeights> in = ImportWeights(out, w.model, w.layout);
    ASSERT_TRUE(in.ok()) << in.status();
    EXPECT_EQ(in->params, w.values);
    // The export describes its model: it reads back without one.
    absl::StatusOr<WeightsFile> read = ReadModelWeights(out);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->values, w.values);
    EXPECT_EQ(read->layout.Hash(), w.layout.Hash());
  }
}

TEST_F(InterchangeTest, HfGpt2TransposesConv1DWeightsAndTiesTheHead) {
  const WeightsFile w = Weights(Tiny("gpt2"));
  const std::string dir = FreshDir("hf");
  ASSERT_TRUE(ExportWeights(w, WeightsFormat::kHf, dir).ok());
  absl::StatusOr<SafetensorsFile> f = ReadSafetensors(dir + "/model.safetensors");
  ASSERT_TRUE(f.ok()) << f.status();
  std::map<std::string, const NamedTensor*> by_name;
  for (const NamedTensor& t : f->tensors) by_name[t.name] = &t;
  EXPECT_EQ(by_name.size(), 2u + 2 * 12 + 2);  // no lm_head: tied
  ASSERT_TRUE(by_name.count("transformer.h.1.attn.c_attn.weight"));
  const NamedTensor& c_attn = *by_name["transformer.h.1.attn.c_attn.weight"];
  EXPECT_EQ(c_attn.shape, (std::vector<int64_t>{16, 48}));  // [in, out]
  int qkv = -1;
  for (int i = 0; i < w.layout.size(); ++i) {
    if (w.layout.param(i).name == "blocks.1.attn.qkv.weight") qkv = i;
  }
  ASSERT_GE(qkv, 0);
  const std::span<const float> mine = w.layout.View(std::span<const float>(w.values), qkv);  // [48, 16]
  for (int r = 0; r < 48; ++r) {
    for (int c = 0; c < 16; ++c) ASSERT_EQ(c_attn.values[c * 48 + r], mine[r * 16 + c]) << r << "," << c;
  }
  EXPECT_EQ(by_name["transformer.h.0.mlp.c_proj.weight"]->shape, (std::vector<int64_t>{64, 16}));
}

TEST_F(InterchangeTest, HfLlamaSplitsQkvAndGateUpByRows) {
  const WeightsFile w = Weights(Tiny("llama", 2));
  const std::string dir = FreshDir("hf");
  ASSERT_TRUE(ExportWeights(w, WeightsFormat::kHf, dir).ok());
  absl::StatusOr<SafetensorsFile> f = ReadSafetensors(dir + "/model.safetensors");
  ASSERT_TRUE(f.ok()) << f.status();
  std::map<std::string, const NamedTensor*> by_name;
  for (const NamedTensor& t : f->tensors) by_name[t.name] = &t;
  EXPECT_EQ(by_name["model.layers.0.self_attn.q_proj.weight"]->shape, (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(by_name["model.layers.0.self_attn.k_proj.weight"]->shape, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(by_name["model.layers.0.mlp.up_proj.weight"]->shape, (std::vector<int64_t>{64, 16}));
  // k_proj is rows [16, 24) of the fused qkv [32, 16].
  const int qkv = 2;  // embed, attn_norm, qkv
  ASSERT_EQ(w.layout.param(qkv).name, "blocks.0.attn.qkv.weight");
  const float* fused = w.values.data() + w.layout.param(qkv).offset;
  EXPECT_EQ(by_name["model.layers.0.self_attn.k_proj.weight"]->values[0], fused[16 * 16]);
  std::ifstream config(dir + "/config.json");
  const std::string text((std::istreambuf_iterator<char>(config)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("\"LlamaForCausalLM\""));
  EXPECT_THAT(text, HasSubstr("\"num_key_value_heads\": 2"));
  EXPECT_THAT(text, HasSubstr("\"rope_theta\": 1000000"));
}

// A 1 KiB llm.c file whose header describes GPT-2 XL (1.6 billion parameters): refused from its
// size, before anything is allocated for the model it describes.
TEST_F(InterchangeTest, AnLlmcHeaderLargerThanItsFileIsRefusedBeforeAllocating) {
  std::array<int32_t, 256> header{};
  header[0] = 20240326;
  header[1] = 3;
  header[2] = 1024;
  header[3] = 50257;
  header[4] = 48;
  header[5] = 25;
  header[6] = 1600;
  header[7] = 50304;
  const std::string path = FreshDir("llmc") + "/gpt2_xl.bin";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(header.data()), sizeof(header));
  const absl::StatusOr<WeightsFile> read = ReadModelWeights(path);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(read.status().message(), HasSubstr("describes 1557611200 parameters"));
  EXPECT_THAT(read.status().message(), HasSubstr("the file holds 1024 bytes"));
}

TEST_F(InterchangeTest, ImportNamesTheTensorAndBothShapesOnMismatch) {
  const WeightsFile w = Weights(Tiny("gpt2"));
  const std::string dir = FreshDir("hf");
  ASSERT_TRUE(ExportWeights(w, WeightsFormat::kHf, dir).ok());
  v1::ModelSpec wider = Tiny("gpt2");
  wider.mutable_transformer()->set_mlp_width(32);
  absl::StatusOr<nn::ParamLayout> layout = TransformerLayout(wider);
  ASSERT_TRUE(layout.ok());
  absl::StatusOr<ImportedWeights> in = ImportWeights(dir, wider, *layout);
  EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(in.status().message(),
              HasSubstr("tensor \"transformer.h.0.mlp.c_fc.weight\" has shape [16, 64]; the model needs [16, 32]"));
  // The same for gradsync's own names and for its weights file.
  const std::string gs = FreshDir("gs");
  ASSERT_TRUE(ExportWeights(w, WeightsFormat::kGradsync, gs).ok());
  EXPECT_THAT(ImportWeights(gs, wider, *layout).status().message(),
              HasSubstr("tensor \"blocks.0.mlp.fc.weight\" has shape [64, 16]; the model needs [32, 16]"));
  const std::string bin = FreshDir("bin") + "/weights.bin";
  ASSERT_TRUE(SaveWeights(bin, w.model, w.layout, w.values).ok());
  EXPECT_THAT(ImportWeights(bin, wider, *layout).status().message(),
              HasSubstr("tensor \"blocks.0.mlp.fc.weight\" has shape [64, 16]; the model needs [32, 16]"));
}

TEST_F(InterchangeTest, ImportRefusesMissingAndUnknownTensors) {
  const WeightsFile w = Weights(Tiny("llama", 2));
  const std::string dir = FreshDir("st");
  std::vector<NamedTensor> tensors = {{"model.embed_tokens.weight", {40, 16}, std::vector<float>(640)}};
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", tensors, {}).ok());
  absl::StatusOr<ImportedWeights> in = ImportWeights(dir, w.model, w.layout);
  EXPECT_THAT(in.status().message(), HasSubstr("has no tensor \"model.layers.0.input_layernorm.weight\""));

  absl::StatusOr<SafetensorsFile> full = [&] {
    EXPECT_TRUE(ExportWeights(w, WeightsFormat::kHf, dir).ok());
    return ReadSafetensors(dir + "/model.safetensors");
  }();
  ASSERT_TRUE(full.ok());
  full->tensors.push_back({"model.layers.0.self_attn.q_norm.weight", {4}, {1, 1, 1, 1}});
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", full->tensors, {}).ok());
  in = ImportWeights(dir, w.model, w.layout);
  EXPECT_THAT(in.status().message(),
              HasSubstr("holds tensor \"model.layers.0.self_attn.q_norm.weight\", which the model has no place for"));
  // An untied output projection cannot be represented.
  full->tensors.pop_back();
  full->tensors.push_back({"lm_head.weight", {40, 16}, std::vector<float>(640, 3.0f)});
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors", full->tensors, {}).ok());
  in = ImportWeights(dir, w.model, w.layout);
  EXPECT_THAT(in.status().message(), HasSubstr("tensor \"lm_head.weight\" differs from the token embedding"));
}

TEST_F(InterchangeTest, LlmcWritesLlmcsHeaderAndPaddedVocabulary) {
  v1::ModelSpec model = Tiny("gpt2");
  const WeightsFile w = Weights(model);
  const std::string path = FreshDir("m") + "/gpt2.bin";
  ASSERT_TRUE(ExportWeights(w, WeightsFormat::kLlmc, path).ok());
  std::ifstream in(path, std::ios::binary);
  std::vector<int32_t> header(256);
  in.read(reinterpret_cast<char*>(header.data()), 1024);
  EXPECT_EQ(std::vector<int32_t>(header.begin(), header.begin() + 8),
            (std::vector<int32_t>{20240326, 3, 8, 40, 2, 4, 16, 128}));
  const int64_t padded = w.layout.total_numel() + (128 - 40) * 16;
  EXPECT_EQ(std::filesystem::file_size(path), 1024u + 4u * padded);
  // llm.c's header against another model names both fields.
  model.mutable_transformer()->set_layers(3);
  absl::StatusOr<nn::ParamLayout> layout = TransformerLayout(model);
  ASSERT_TRUE(layout.ok());
  EXPECT_THAT(ImportWeights(path, model, *layout).status().message(),
              HasSubstr("llm.c header num_layers is 2; the model has 3 (model.transformer.layers)"));
}

TEST_F(InterchangeTest, FormatsRefuseModelsTheyCannotHold) {
  const std::string out = FreshDir("o") + "/x";
  EXPECT_THAT(ExportWeights(Weights(Tiny("llama", 2)), WeightsFormat::kLlmc, out).message(),
              HasSubstr("model.transformer.flavour"));
  EXPECT_THAT(ExportWeights(Weights(Tiny("gpt2", 2)), WeightsFormat::kHf, out).message(),
              HasSubstr("model.transformer.kvHeads"));
  v1::ModelSpec narrow = Tiny("gpt2");
  narrow.mutable_transformer()->set_mlp_width(32);
  EXPECT_THAT(ExportWeights(Weights(narrow), WeightsFormat::kLlmc, out).message(),
              HasSubstr("model.transformer.mlpWidth"));
  EXPECT_THAT(ParseWeightsFormat("onnx", "--format").status().message(),
              HasSubstr("--format: must be one of hf, gradsync, llmc, got \"onnx\""));
}

TEST_F(InterchangeTest, ReadsRankZerosPartOfACommittedCheckpoint) {
  const WeightsFile w = Weights(Tiny("gpt2"));
  const std::string dir = FreshDir("ckpt") + "/step-000000004";
  RankState state;
  state.model = w.model;
  state.layout = w.layout;
  state.params = w.values;
  state.adam_m.assign(w.values.size(), 0.5f);
  state.adam_v.assign(w.values.size(), 0.25f);
  state.adam_step = 4;
  state.step = 4;
  absl::StatusOr<v1::CheckpointPart> part = WriteRankPart(dir, state);
  ASSERT_TRUE(part.ok()) << part.status();
  // Not committed yet: refused, without reading the part.
  EXPECT_FALSE(ReadModelWeights(dir).ok());
  v1::CheckpointManifest manifest;
  manifest.set_step(4);
  manifest.set_world_size(1);
  *manifest.add_parts() = *part;
  ASSERT_TRUE(WriteManifest(dir, manifest).ok());
  absl::StatusOr<WeightsFile> read = ReadModelWeights(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->values, w.values);
  absl::StatusOr<ImportedWeights> in = ImportWeights(dir, w.model, w.layout);
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_TRUE(in->checkpoint.has_value());
  EXPECT_EQ(in->checkpoint->adam_step, 4);
  EXPECT_EQ(in->checkpoint->adam_m, state.adam_m);
}

}  // namespace
}  // namespace gradsync::ckpt

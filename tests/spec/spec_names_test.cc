// The names users bring from other tools: each unknown field says which gradsync field it is, as
// `--set` and a spec file both read them.
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"

namespace gradsync::spec {
namespace {

using ::testing::HasSubstr;

std::string Refusal(const std::string& text, const std::vector<std::string>& overrides = {}) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(text, "spec.yaml", overrides);
  EXPECT_FALSE(spec.ok()) << text;
  return spec.ok() ? "" : std::string(spec.status().message());
}

constexpr char kModel[] = "model: {preset: gpt-tiny, transformer: {flavour: llama}}\n";

// Hugging Face config.json names, each pointing at its field.
TEST(SpecNames, HuggingFaceConfigNamesPointAtTheirFields) {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"hiddenSize", "model.transformer.width"},         {"hidden_size", "model.transformer.width"},
      {"intermediateSize", "model.transformer.mlpWidth"}, {"num_key_value_heads", "model.transformer.kvHeads"},
      {"num_hidden_layers", "model.transformer.layers"},  {"max_position_embeddings", "model.transformer.seqLen"},
      {"rms_norm_eps", "model.transformer.normEps"},      {"ropeBase", "model.transformer.ropeTheta"},
  };
  for (const auto& [key, field] : names) {
    const std::string message = Refusal(kModel, {absl::StrCat("model.transformer.", key, "=8")});
    EXPECT_THAT(message, HasSubstr(absl::StrCat("model.transformer.", key, ": unknown field"))) << key;
    EXPECT_THAT(message, HasSubstr(absl::StrCat(key, " is ")));
    EXPECT_THAT(message, HasSubstr(absl::StrCat("name for ", field))) << key;
  }
}

// Training arguments by Transformers' and torchrun's names, in a spec file.
TEST(SpecNames, TrainingArgumentNamesPointAtTheirFields) {
  EXPECT_THAT(Refusal(absl::StrCat(kModel, "training: {learningRate: 0.001}\n")),
              HasSubstr("training.learningRate: unknown field; learningRate is Transformers' TrainingArguments "
                        "name for training.lr"));
  EXPECT_THAT(Refusal(absl::StrCat(kModel, "training: {learning_rate: 0.001}\n")), HasSubstr("for training.lr"));
  EXPECT_THAT(Refusal(absl::StrCat(kModel, "training: {gradient_accumulation_steps: 4}\n")),
              HasSubstr("for training.gradAccumSteps"));
  EXPECT_THAT(Refusal(absl::StrCat(kModel, "training: {nproc_per_node: 4}\n")),
              HasSubstr("nproc_per_node is torchrun's name for training.worldSize"));
}

// A field of the spec written at another level says where it lives.
TEST(SpecNames, AFieldAtTheWrongLevelSaysWhereItIs) {
  EXPECT_THAT(Refusal(absl::StrCat(kModel, "lr: 0.001\n")), HasSubstr("lr: unknown field; did you mean training.lr?"));
  EXPECT_THAT(Refusal(absl::StrCat(kModel, "training: {sharding: full}\n")),
              HasSubstr("did you mean ddp.sharding?"));
}

// A misspelling within the message still wins over the other sources of names.
TEST(SpecNames, AMisspellingIsStillAMisspelling) {
  EXPECT_THAT(Refusal(absl::StrCat(kModel, "training: {wordSize: 2}\n")), HasSubstr("did you mean worldSize?"));
  const std::string unknown = Refusal(absl::StrCat(kModel, "training: {zzqx: 2}\n"));
  EXPECT_THAT(unknown, HasSubstr("training.zzqx: unknown field"));
  EXPECT_THAT(unknown, ::testing::Not(HasSubstr("did you mean")));
}

}  // namespace
}  // namespace gradsync::spec

// The typed model configuration (model_config.h) and the transformer's parameter registration
// (transformer_params.h): spec strings to enums and back, the errors for unknown values, the
// derived sizes, and a layout that matches NumParams and the on_ready order.
#include "gradsync/nn/model_config.h"

#include <utility>
#include <vector>

#include "gradsync/nn/param_layout.h"
#include "gradsync/nn/presets.h"
#include "gradsync/nn/transformer_params.h"
#include "gtest/gtest.h"

namespace gradsync::nn {
namespace {

gradsync::v1::TransformerConfig Resolved(const char* preset) {
  gradsync::v1::ModelSpec model;
  model.set_preset(preset);
  absl::StatusOr<gradsync::v1::TransformerConfig> config = ResolveTransformerConfig(model);
  EXPECT_TRUE(config.ok()) << config.status();
  return *config;
}

TEST(ModelConfigTest, NamesParseBack) {
  for (Flavour f : {Flavour::kGpt2, Flavour::kLlama}) {
    absl::StatusOr<Flavour> parsed = ParseFlavour(FlavourName(f));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, f);
  }
  for (Activation a : {Activation::kGelu, Activation::kRelu}) {
    absl::StatusOr<Activation> parsed = ParseActivation(ActivationName(a));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, a);
  }
}

TEST(ModelConfigTest, UnknownValuesNameFieldAndChoices) {
  EXPECT_EQ(ParseFlavour("bert").status().message(),
            "model.transformer.flavour: must be one of gpt2, llama, got \"bert\"");
  EXPECT_EQ(ParseActivation("tanh").status().message(),
            "model.mlp.activation: unknown activation \"tanh\"; known: gelu, relu");
  gradsync::v1::TransformerConfig config = Resolved("gpt-tiny");
  config.set_flavour("bert");
  EXPECT_EQ(TransformerDims::FromConfig(config).status().message(),
            "model.transformer.flavour: must be one of gpt2, llama, got \"bert\"");
}

TEST(ModelConfigTest, DerivesSizes) {
  absl::StatusOr<TransformerDims> llama = TransformerDims::FromConfig(Resolved("minimind-26m"));
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_EQ(llama->flavour, Flavour::kLlama);
  EXPECT_EQ(llama->head_dim, 512 / 8);
  EXPECT_EQ(llama->qkv_width, (8 + 2 * 2) * 64);
  EXPECT_EQ(llama->fc_width, 2 * 1408);
  const kernels::AttentionShape shape = llama->Attention(3, 5);
  EXPECT_EQ(shape.qkv_width(), llama->qkv_width);
  EXPECT_EQ(shape.out_width(), llama->width);

  absl::StatusOr<TransformerDims> gpt2 = TransformerDims::FromConfig(Resolved("gpt-tiny"));
  ASSERT_TRUE(gpt2.ok()) << gpt2.status();
  EXPECT_TRUE(gpt2->gpt2());
  EXPECT_EQ(gpt2->fc_width, gpt2->mlp_width);
}

TEST(TransformerParamsTest, LayoutMatchesNumParamsAndReadyOrder) {
  for (const char* preset : {"gpt-tiny", "minimind-26m"}) {
    SCOPED_TRACE(preset);
    const gradsync::v1::TransformerConfig config = Resolved(preset);
    const TransformerDims dims = TransformerDims::FromValidConfig(config);
    ParamLayout layout;
    const TransformerParams params = AddTransformerParams(dims, &layout);
    EXPECT_EQ(layout.total_numel(), NumParams(config));
    EXPECT_EQ(static_cast<int>(params.init.size()), layout.size());
    ASSERT_EQ(static_cast<int64_t>(params.blocks.size()), dims.layers);
    // The ranges on_ready reports cover the layout once, back to front.
    const std::vector<std::pair<int, int>> ranges = params.ReadyRanges(layout.size());
    int end = layout.size();
    for (const auto& [first, last] : ranges) {
      EXPECT_EQ(last, end);
      EXPECT_LT(first, last);
      end = first;
    }
    EXPECT_EQ(end, 0);
  }
}

}  // namespace
}  // namespace gradsync::nn

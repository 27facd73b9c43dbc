// The transformer presets as models: layout, sizes, initialisation, batch checks, on_ready
// order, accumulation, ignored targets, causality, and that training lowers the loss.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gradsync/nn/model.h"
#include "gradsync/nn/optimizer.h"
#include "gradsync/nn/presets.h"
#include "gtest/gtest.h"
#include "model_properties.h"
#include "plans.h"
#include "transformer_util.h"

namespace gradsync::nn {
namespace {

using testing::Grads;
using testing::MustCreate;
using testing::RandomTokens;
using testing::TinySpec;

class TransformerTest : public ::testing::TestWithParam<std::string> {
 protected:
  gradsync::v1::JobSpec Spec() const { return TinySpec(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(Flavours, TransformerTest, ::testing::Values("gpt2", "llama"));

TEST_P(TransformerTest, LayoutMatchesTheConfig) {
  std::unique_ptr<Model> model = MustCreate(Spec());
  const ParamLayout& layout = model->layout();
  const bool gpt2 = GetParam() == "gpt2";
  EXPECT_EQ(layout.size(), gpt2 ? 2 + 2 * 12 + 2 : 1 + 2 * 6 + 1);
  EXPECT_EQ(layout.param(0).name, gpt2 ? "wte" : "embed");
  EXPECT_EQ(layout.param(0).shape, (std::vector<int64_t>{7, 8}));
  const int qkv = gpt2 ? 4 : 2;
  EXPECT_EQ(layout.param(qkv).name, "blocks.0.attn.qkv.weight");
  // H 2 of D 4, plus 2 (gpt2) or 1 (llama) kv heads for k and v each.
  EXPECT_EQ(layout.param(qkv).shape, (std::vector<int64_t>{gpt2 ? 24 : 16, 8}));
  EXPECT_EQ(layout.param(layout.size() - 1).name, gpt2 ? "lnf.bias" : "norm.weight");
  for (const ParamInfo& p : layout.params()) {
    EXPECT_EQ(p.weight_decay, p.shape.size() == 2) << p.name;
  }
  absl::StatusOr<gradsync::v1::TransformerConfig> config = ResolveTransformerConfig(Spec().model());
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(layout.total_numel(), NumParams(*config));
}

TEST_P(TransformerTest, InitFollowsGpt2AndIsDeterministic) {
  gradsync::v1::JobSpec spec = Spec();
  spec.mutable_model()->mutable_transformer()->set_width(64);
  spec.mutable_model()->mutable_transformer()->set_mlp_width(96);
  std::unique_ptr<Model> a = MustCreate(spec), b = MustCreate(spec);
  ASSERT_EQ(a->params().size(), b->params().size());
  EXPECT_EQ(std::memcmp(a->params().data(), b->params().data(), a->params().size_bytes()), 0);
  b->InitParams(43);
  EXPECT_FALSE(std::ranges::equal(a->params(), b->params()));

  const ParamLayout& layout = a->layout();
  for (int i = 0; i < layout.size(); ++i) {
    const ParamInfo& info = layout.param(i);
    std::span<const float> p = layout.View(std::as_const(*a).params(), i);
    if (info.shape.size() == 1) {
      const float want = info.name.ends_with("bias") ? 0.0f : 1.0f;
      EXPECT_TRUE(std::ranges::all_of(p, [&](float x) { return x == want; })) << info.name;
      continue;
    }
    double sum_sq = 0.0;
    for (float x : p) sum_sq += double{x} * x;
    const double std = std::sqrt(sum_sq / p.size());
    const bool residual = info.name.ends_with("attn.proj.weight") || info.name.ends_with("attn.o.weight") ||
                          info.name.ends_with("mlp.proj.weight") || info.name.ends_with("mlp.down.weight");
    const double want = residual ? 0.02 / std::sqrt(2.0 * 2) : 0.02;
    EXPECT_NEAR(std, want, 0.15 * want) << info.name;
  }
}

TEST_P(TransformerTest, ReportsEveryGroupOnceInReverseWithFinalGradients) {
  std::unique_ptr<Model> model = MustCreate(Spec());
  const Batch batch = RandomTokens(2, 5, 7, 3);
  std::vector<std::pair<int, int>> calls;
  std::vector<std::vector<float>> at_ready;
  const GradsReadyFn on_ready = [&](int first, int last) {
    calls.emplace_back(first, last);
    const ParamInfo& begin = model->layout().param(first);
    const ParamInfo& end = model->layout().param(last - 1);
    at_ready.emplace_back(model->grads().begin() + begin.offset, model->grads().begin() + end.offset + end.numel);
  };
  ASSERT_TRUE(model->ForwardBackward(batch, 1.0f, on_ready).ok());
  const int n = model->layout().size();
  const std::vector<std::pair<int, int>> want =
      GetParam() == "gpt2" ? std::vector<std::pair<int, int>>{{26, n}, {14, 26}, {2, 14}, {0, 2}}
                           : std::vector<std::pair<int, int>>{{13, n}, {7, 13}, {1, 7}, {0, 1}};
  ASSERT_EQ(calls, want);
  for (size_t c = 0; c < calls.size(); ++c) {
    const int64_t offset = model->layout().param(calls[c].first).offset;
    EXPECT_TRUE(std::ranges::equal(at_ready[c], model->grads().subspan(offset, at_ready[c].size())))
        << "group " << c << " changed after it was reported";
  }

  // An empty batch adds nothing and still reports every group once.
  const std::vector<float> before = Grads(*model);
  calls.clear();
  absl::StatusOr<LossSum> empty =
      model->ForwardBackward(Batch{}, 1.0f, [&](int f, int l) { calls.emplace_back(f, l); });
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->count, 0);
  EXPECT_EQ(empty->sum, 0.0);
  EXPECT_EQ(calls, want);
  EXPECT_EQ(Grads(*model), before);
}

TEST_P(TransformerTest, GradientsAccumulateAndScale) {
  std::unique_ptr<Model> model = MustCreate(Spec());
  testing::ExpectGradientsAccumulateAndScale(*model, RandomTokens(2, 5, 7, 4), 10);
}

TEST_P(TransformerTest, IgnoredSequenceEqualsDroppingIt) {
  std::unique_ptr<Model> model = MustCreate(Spec());
  Batch both = RandomTokens(2, 5, 7, 5);
  std::fill(both.targets.begin() + 5, both.targets.end(), -1);
  Batch first = both;
  first.size = 1;
  first.tokens.resize(5);
  first.targets.resize(5);
  model->ZeroGrads();
  absl::StatusOr<LossSum> a = model->ForwardBackward(both, 1.0f, {});
  const std::vector<float> grads_a = Grads(*model);
  model->ZeroGrads();
  absl::StatusOr<LossSum> b = model->ForwardBackward(first, 1.0f, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->count, 5);
  EXPECT_NEAR(a->sum, b->sum, 1e-6 * b->sum);
  for (size_t j = 0; j < grads_a.size(); ++j) {
    EXPECT_NEAR(grads_a[j], model->grads()[j], 1e-6f + 1e-5f * std::abs(grads_a[j])) << j;
  }
}

TEST_P(TransformerTest, LaterTokensDoNotChangeEarlierLogits) {
  std::unique_ptr<Model> model = MustCreate(Spec());
  Batch batch = RandomTokens(2, 5, 7, 6);
  const std::vector<float> logits = *model->Predict(batch);
  ASSERT_EQ(logits.size(), 2u * 5u * 7u);
  batch.tokens[3] = (batch.tokens[3] + 1) % 7;  // sequence 0, position 3
  const std::vector<float> changed = *model->Predict(batch);
  for (int64_t row = 0; row < 10; ++row) {
    const bool same = std::equal(logits.begin() + row * 7, logits.begin() + row * 7 + 7, changed.begin() + row * 7);
    EXPECT_EQ(same, row < 3 || row >= 5) << "row " << row;
  }
  // A shorter sequence gives the same logits as the start of a longer one.
  Batch prefix;
  prefix.size = 1;
  prefix.tokens.assign(batch.tokens.begin(), batch.tokens.begin() + 3);
  const std::vector<float> short_logits = *model->Predict(prefix);
  for (size_t i = 0; i < short_logits.size(); ++i) EXPECT_NEAR(short_logits[i], changed[i], 1e-6f);
}

TEST_P(TransformerTest, ReusedBuffersDoNotLeakBetweenBatches) {
  std::unique_ptr<Model> model = MustCreate(Spec());
  const Batch small = RandomTokens(1, 3, 7, 7), large = RandomTokens(3, 5, 7, 8);
  model->ZeroGrads();
  ASSERT_TRUE(model->ForwardBackward(small, 1.0f, {}).ok());
  const std::vector<float> fresh = Grads(*model);
  ASSERT_TRUE(model->ForwardBackward(large, 1.0f, {}).ok());
  ASSERT_TRUE(model->Evaluate(large).ok());
  model->ZeroGrads();
  ASSERT_TRUE(model->ForwardBackward(small, 1.0f, {}).ok());
  EXPECT_EQ(Grads(*model), fresh);
}

TEST_P(TransformerTest, RejectsBatchesThatDoNotFit) {
  std::unique_ptr<Model> model = MustCreate(Spec());
  auto code = [&](const Batch& batch) { return model->ForwardBackward(batch, 1.0f, {}).status().code(); };
  Batch too_long = RandomTokens(1, 6, 7, 1);  // seqLen is 5
  EXPECT_EQ(code(too_long), absl::StatusCode::kInvalidArgument);
  Batch ragged = RandomTokens(2, 4, 7, 1);
  ragged.tokens.pop_back();
  ragged.targets.pop_back();
  EXPECT_EQ(code(ragged), absl::StatusCode::kInvalidArgument);
  Batch bad_token = RandomTokens(2, 4, 7, 1);
  bad_token.tokens[2] = 7;
  EXPECT_EQ(code(bad_token), absl::StatusCode::kInvalidArgument);
  Batch bad_target = RandomTokens(2, 4, 7, 1);
  bad_target.targets[5] = -2;
  EXPECT_EQ(code(bad_target), absl::StatusCode::kInvalidArgument);
  Batch no_targets = RandomTokens(2, 4, 7, 1);
  no_targets.targets.clear();
  EXPECT_EQ(code(no_targets), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(model->Predict(no_targets).ok());
  EXPECT_TRUE(std::ranges::all_of(model->grads(), [](float g) { return g == 0.0f; }));
}

TEST_P(TransformerTest, OverfitsOneBatch) {
  gradsync::v1::JobSpec spec = Spec();
  gradsync::v1::TransformerConfig* t = spec.mutable_model()->mutable_transformer();
  t->set_width(32);
  t->set_mlp_width(64);
  t->set_seq_len(16);
  t->set_vocab_size(32);
  std::unique_ptr<Model> model = MustCreate(spec);
  const Batch batch = RandomTokens(4, 16, 32, 9);
  AdamW adam(model->layout(), AdamWConfig{.weight_decay = 0.0});
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 50; ++step) {
    model->ZeroGrads();
    absl::StatusOr<LossSum> loss = model->ForwardBackward(batch, 1.0f / 64, {});
    ASSERT_TRUE(loss.ok());
    (step == 0 ? first : last) = loss->sum / loss->count;
    adam.Step(model->params(), model->grads(), 1e-2);
  }
  EXPECT_NEAR(first, std::log(32.0), 0.1);
  EXPECT_LT(last, 0.3 * first) << "first " << first << ", last " << last;
}

TEST_P(TransformerTest, TrainingIsBitwiseReproducible) {
  std::vector<std::vector<float>> runs;
  for (int run = 0; run < 2; ++run) {
    std::unique_ptr<Model> model = MustCreate(Spec());
    AdamW adam(model->layout(), AdamWConfig{.weight_decay = 0.1});
    for (int step = 0; step < 3; ++step) {
      model->ZeroGrads();
      ASSERT_TRUE(model->ForwardBackward(RandomTokens(3, 5, 7, 10 + step), 0.1f, {}).ok());
      adam.Step(model->params(), model->grads(), 1e-2);
    }
    runs.emplace_back(model->params().begin(), model->params().end());
  }
  ASSERT_EQ(runs[0].size(), runs[1].size());
  EXPECT_EQ(std::memcmp(runs[0].data(), runs[1].data(), runs[0].size() * sizeof(float)), 0);
}

TEST(TransformerPresetTest, InitialLossIsLogVocab) {
  gradsync::v1::JobSpec spec;
  spec.mutable_model()->set_preset("gpt-tiny");
  std::unique_ptr<Model> model = MustCreate(spec);
  EXPECT_EQ(model->Describe(), "gpt2 L4 H4 C128 M512 T128 V256, 0.84M params");
  absl::StatusOr<LossSum> loss = model->Evaluate(RandomTokens(2, 128, 256, 1));
  ASSERT_TRUE(loss.ok());
  EXPECT_EQ(loss->count, 256);
  EXPECT_NEAR(loss->sum / loss->count, std::log(256.0), 0.1);
}

TEST(TransformerPresetTest, CreateModelRejectsBadConfigs) {
  gradsync::v1::JobSpec spec;
  spec.mutable_model()->set_preset("minimind-26m");
  spec.mutable_model()->mutable_transformer()->set_kv_heads(3);
  EXPECT_EQ(gradsync::testing::ModelOf(spec).status(),
            absl::InvalidArgumentError("model.transformer.kvHeads: must divide heads (8), got 3"));
  spec.mutable_model()->set_preset("gpt-huge");
  EXPECT_EQ(gradsync::testing::ModelOf(spec).status(),
            absl::InvalidArgumentError("model.preset: unknown preset \"gpt-huge\"; known: mlp, "
                                       "gpt-tiny, gpt2-124m, minimind-26m"));
}

}  // namespace
}  // namespace gradsync::nn

// The "mlp" model: layout, initialisation, batch checks, and gradients against central finite
// differences of Evaluate().
#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gradsync/core/rng.h"
#include "gradsync/nn/model.h"
#include "gradsync/v1/job.pb.h"
#include "gtest/gtest.h"
#include "model_properties.h"
#include "plans.h"

namespace gradsync::nn {
namespace {

using testing::Grads;

gradsync::v1::JobSpec MlpSpec(int input_dim, std::vector<int> hidden, int num_classes,
                              const char* activation = "gelu") {
  gradsync::v1::JobSpec spec;
  spec.mutable_model()->set_preset("mlp");
  for (int h : hidden) spec.mutable_model()->mutable_mlp()->add_hidden_dims(h);
  spec.mutable_model()->mutable_mlp()->set_activation(activation);
  gradsync::v1::SyntheticData* data = spec.mutable_data()->mutable_synthetic();
  data->set_num_samples(100);
  data->set_input_dim(input_dim);
  data->set_num_classes(num_classes);
  data->set_teacher_hidden(8);
  data->set_seed(1);
  spec.mutable_training()->set_seed(42);
  return spec;
}

// input 4, hidden [5, 3], 3 classes.
gradsync::v1::JobSpec TinySpec() { return MlpSpec(4, {5, 3}, 3); }

std::unique_ptr<Model> MustCreate(const gradsync::v1::JobSpec& spec) {
  absl::StatusOr<std::unique_ptr<Model>> model = gradsync::testing::ModelOf(spec);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

Batch RandomBatch(int64_t n, int64_t dim, int classes, uint64_t seed) {
  Rng rng(seed);
  Batch batch;
  batch.size = n;
  batch.feature_dim = dim;
  for (int64_t i = 0; i < n * dim; ++i) batch.features.push_back(static_cast<float>(rng.Normal()));
  for (int64_t i = 0; i < n; ++i) batch.targets.push_back(static_cast<int32_t>(rng.Below(classes)));
  return batch;
}

TEST(MlpTest, LayoutInForwardOrder) {
  std::unique_ptr<Model> model = MustCreate(TinySpec());
  const ParamLayout& layout = model->layout();
  ASSERT_EQ(layout.size(), 6);
  const std::vector<std::pair<const char*, std::vector<int64_t>>> want = {
      {"layers.0.weight", {5, 4}}, {"layers.0.bias", {5}},      {"layers.1.weight", {3, 5}},
      {"layers.1.bias", {3}},      {"layers.2.weight", {3, 3}}, {"layers.2.bias", {3}},
  };
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(layout.param(i).name, want[i].first);
    EXPECT_EQ(layout.param(i).shape, want[i].second);
    EXPECT_EQ(layout.param(i).weight_decay, i % 2 == 0) << layout.param(i).name;
  }
  EXPECT_EQ(layout.total_numel(), 20 + 5 + 15 + 3 + 9 + 3);
  EXPECT_EQ(model->params().size(), 55u);
  EXPECT_EQ(model->grads().size(), 55u);
  EXPECT_EQ(model->Describe(), "mlp 4-5-3-3 gelu, 55 params");
}

TEST(MlpTest, DescribesDefaultModel) {
  std::unique_ptr<Model> model = MustCreate(MlpSpec(32, {128, 128}, 10));
  EXPECT_EQ(model->Describe(), "mlp 32-128-128-10 gelu, 22K params");
  EXPECT_EQ(MustCreate(MlpSpec(32, {}, 10, "relu"))->Describe(), "mlp 32-10 relu, 330 params");
}

TEST(MlpTest, InitIsDeterministicAndScaled) {
  const gradsync::v1::JobSpec spec = MlpSpec(32, {128, 128}, 10);
  std::unique_ptr<Model> a = MustCreate(spec), b = MustCreate(spec);
  EXPECT_TRUE(std::ranges::equal(a->params(), b->params()));
  b->InitParams(43);
  EXPECT_FALSE(std::ranges::equal(a->params(), b->params()));
  b->InitParams(42);  // CreateModel initialises from training.seed
  EXPECT_TRUE(std::ranges::equal(a->params(), b->params()));

  const ParamLayout& layout = a->layout();
  for (int i = 0; i < layout.size(); ++i) {
    std::span<const float> p = layout.View(std::as_const(*a).params(), i);
    if (!layout.param(i).weight_decay) {
      EXPECT_TRUE(std::ranges::all_of(p, [](float x) { return x == 0.0f; })) << "bias " << i;
      continue;
    }
    double sum_sq = 0.0;
    for (float x : p) sum_sq += double{x} * x;
    const double std = std::sqrt(sum_sq / p.size());
    const double want = 1.0 / std::sqrt(static_cast<double>(layout.param(i).shape[1]));
    EXPECT_NEAR(std, want, 0.1 * want) << layout.param(i).name;
  }
}

TEST(MlpTest, RejectsBadSpecs) {
  gradsync::v1::JobSpec spec = TinySpec();
  spec.mutable_model()->set_preset("x");
  absl::StatusOr<std::unique_ptr<Model>> model = gradsync::testing::ModelOf(spec);
  EXPECT_EQ(model.status(), absl::InvalidArgumentError(
                                "model.preset: unknown preset \"x\"; known: mlp, gpt-tiny, gpt2-124m, minimind-26m"));

  spec = MlpSpec(4, {5}, 3, "tanh");
  model = gradsync::testing::ModelOf(spec);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("model.mlp.activation"), std::string::npos);

  spec = MlpSpec(4, {5, 0}, 3);
  EXPECT_NE(gradsync::testing::ModelOf(spec).status().message().find("model.mlp.hiddenDims[1]"), std::string::npos);

  spec = TinySpec();
  spec.mutable_data()->clear_synthetic();
  EXPECT_EQ(gradsync::testing::ModelOf(spec).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MlpTest, RejectsBatchesThatDoNotFit) {
  std::unique_ptr<Model> model = MustCreate(TinySpec());
  Batch wrong_dim = RandomBatch(2, 5, 3, 1);
  EXPECT_EQ(model->ForwardBackward(wrong_dim, 1.0f, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model->Predict(wrong_dim).status().code(), absl::StatusCode::kInvalidArgument);

  Batch bad_target = RandomBatch(2, 4, 3, 1);
  bad_target.targets[1] = 3;
  EXPECT_EQ(model->ForwardBackward(bad_target, 1.0f, {}).status().code(), absl::StatusCode::kInvalidArgument);
  bad_target.targets[1] = -2;
  EXPECT_EQ(model->Evaluate(bad_target).status().code(), absl::StatusCode::kInvalidArgument);

  Batch short_features = RandomBatch(2, 4, 3, 1);
  short_features.features.pop_back();
  EXPECT_EQ(model->Evaluate(short_features).status().code(), absl::StatusCode::kInvalidArgument);

  Batch missing_targets = RandomBatch(2, 4, 3, 1);
  missing_targets.targets.clear();
  EXPECT_EQ(model->Evaluate(missing_targets).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(model->Predict(missing_targets).ok());

  EXPECT_TRUE(std::ranges::all_of(model->grads(), [](float g) { return g == 0.0f; }));
}

// Central differences of the float loss sum. With eps = 1e-2 the truncation error (eps^2 / 6 *
// f''') and the float rounding of the loss sum (~3e-7 / eps) stay below 2e-5 here (1.5e-5 at
// most when measured), so these tolerances leave a margin of about 6 yet catch an error of a
// percent in any sizeable gradient.
constexpr float kEps = 1e-2f;
constexpr double kAbsTol = 1e-4;
constexpr double kRelTol = 5e-3;

std::vector<double> FiniteDifferenceGrads(Model& model, const Batch& batch) {
  std::vector<double> fd(model.params().size());
  for (size_t j = 0; j < fd.size(); ++j) {
    const float saved = model.params()[j];
    model.params()[j] = saved + kEps;
    const double plus = model.Evaluate(batch)->sum;
    model.params()[j] = saved - kEps;
    const double minus = model.Evaluate(batch)->sum;
    model.params()[j] = saved;
    fd[j] = (plus - minus) / (2.0 * kEps);
  }
  return fd;
}

// Indices of the gradient entries that disagree with the finite differences.
std::vector<size_t> Mismatches(const std::vector<float>& analytic, const std::vector<double>& fd) {
  std::vector<size_t> bad;
  for (size_t j = 0; j < fd.size(); ++j) {
    const double scale = std::max(std::abs(fd[j]), std::abs(double{analytic[j]}));
    if (std::abs(fd[j] - analytic[j]) > kAbsTol + kRelTol * scale) bad.push_back(j);
  }
  return bad;
}

void CheckGradients(const char* activation) {
  std::unique_ptr<Model> model = MustCreate(MlpSpec(4, {5, 3}, 3, activation));
  const Batch batch = RandomBatch(3, 4, 3, 7);
  model->ZeroGrads();
  ASSERT_TRUE(model->ForwardBackward(batch, 1.0f, {}).ok());
  const std::vector<float> analytic = Grads(*model);
  const std::vector<double> fd = FiniteDifferenceGrads(*model, batch);

  for (size_t j : Mismatches(analytic, fd)) {
    ADD_FAILURE() << "param element " << j << ": analytic " << analytic[j] << ", fd " << fd[j];
  }
  // The check has teeth: making any one parameter tensor's gradient 3% off fails it.
  for (int i = 0; i < model->layout().size(); ++i) {
    std::vector<float> wrong = analytic;
    for (float& g : model->layout().View(std::span<float>(wrong), i)) g *= 1.03f;
    EXPECT_FALSE(Mismatches(wrong, fd).empty()) << model->layout().param(i).name << ": a 3% error goes unnoticed";
  }
}

TEST(MlpTest, GradientsMatchFiniteDifferencesGelu) { CheckGradients("gelu"); }

// Finite differences across ReLU's kink would be wrong; the batch and weights are fixed, and no
// pre-activation of this batch lies within eps of 0.
TEST(MlpTest, GradientsMatchFiniteDifferencesRelu) { CheckGradients("relu"); }

TEST(MlpTest, ReportsEveryLayerInReverseWithFinalGradients) {
  std::unique_ptr<Model> model = MustCreate(TinySpec());
  const Batch batch = RandomBatch(3, 4, 3, 7);
  std::vector<std::pair<int, int>> calls;
  std::vector<std::vector<float>> at_ready;
  const GradsReadyFn on_ready = [&](int first, int last) {
    calls.emplace_back(first, last);
    const ParamInfo& begin = model->layout().param(first);
    const ParamInfo& end_param = model->layout().param(last - 1);
    at_ready.emplace_back(model->grads().begin() + begin.offset,
                          model->grads().begin() + end_param.offset + end_param.numel);
  };
  ASSERT_TRUE(model->ForwardBackward(batch, 1.0f, on_ready).ok());
  ASSERT_EQ(calls, (std::vector<std::pair<int, int>>{{4, 6}, {2, 4}, {0, 2}}));
  // Nothing touches a range after it is reported.
  for (size_t c = 0; c < calls.size(); ++c) {
    const int64_t offset = model->layout().param(calls[c].first).offset;
    EXPECT_TRUE(std::ranges::equal(at_ready[c], model->grads().subspan(offset, at_ready[c].size())));
  }
}

TEST(MlpTest, GradientsAccumulateAndScale) {
  std::unique_ptr<Model> model = MustCreate(TinySpec());
  testing::ExpectGradientsAccumulateAndScale(*model, RandomBatch(3, 4, 3, 7), 3);
}

TEST(MlpTest, IgnoredTargetsDropOut) {
  std::unique_ptr<Model> model = MustCreate(TinySpec());
  Batch with_ignored = RandomBatch(3, 4, 3, 7);
  with_ignored.targets[1] = -1;
  Batch without = with_ignored;
  without.size = 2;
  without.features.erase(without.features.begin() + 4, without.features.begin() + 8);
  without.targets.erase(without.targets.begin() + 1);

  model->ZeroGrads();
  absl::StatusOr<LossSum> a = model->ForwardBackward(with_ignored, 1.0f, {});
  const std::vector<float> grads_a = Grads(*model);
  model->ZeroGrads();
  absl::StatusOr<LossSum> b = model->ForwardBackward(without, 1.0f, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->count, 2);
  EXPECT_NEAR(a->sum, b->sum, 1e-6);
  for (size_t j = 0; j < grads_a.size(); ++j) EXPECT_NEAR(grads_a[j], model->grads()[j], 1e-6f);
}

TEST(MlpTest, EmptyBatchAddsNothingButReportsEveryLayer) {
  std::unique_ptr<Model> model = MustCreate(TinySpec());
  ASSERT_TRUE(model->ForwardBackward(RandomBatch(3, 4, 3, 7), 1.0f, {}).ok());
  const std::vector<float> before = Grads(*model);
  Batch empty;
  empty.feature_dim = 4;
  std::vector<std::pair<int, int>> calls;
  absl::StatusOr<LossSum> loss = model->ForwardBackward(empty, 1.0f, [&](int f, int l) { calls.emplace_back(f, l); });
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_EQ(loss->sum, 0.0);
  EXPECT_EQ(loss->count, 0);
  EXPECT_EQ(Grads(*model), before);
  EXPECT_EQ(calls, (std::vector<std::pair<int, int>>{{4, 6}, {2, 4}, {0, 2}}));
  EXPECT_TRUE(model->Predict(empty)->empty());
}

TEST(MlpTest, PredictGivesTheLogitsEvaluateScores) {
  std::unique_ptr<Model> model = MustCreate(TinySpec());
  const Batch batch = RandomBatch(4, 4, 3, 9);
  absl::StatusOr<std::vector<float>> logits = model->Predict(batch);
  ASSERT_TRUE(logits.ok());
  ASSERT_EQ(logits->size(), 4u * 3u);
  double sum = 0.0;
  for (int r = 0; r < 4; ++r) {
    const float* z = logits->data() + 3 * r;
    double norm = 0.0;
    for (int c = 0; c < 3; ++c) norm += std::exp(double{z[c]});
    sum += std::log(norm) - z[batch.targets[r]];
  }
  EXPECT_NEAR(model->Evaluate(batch)->sum, sum, 1e-6);
}

TEST(MlpTest, ReusedBuffersDoNotLeakBetweenBatches) {
  std::unique_ptr<Model> model = MustCreate(TinySpec());
  const Batch small = RandomBatch(2, 4, 3, 3), large = RandomBatch(6, 4, 3, 4);
  model->ZeroGrads();
  ASSERT_TRUE(model->ForwardBackward(small, 1.0f, {}).ok());
  const std::vector<float> fresh = Grads(*model);
  ASSERT_TRUE(model->ForwardBackward(large, 1.0f, {}).ok());
  model->ZeroGrads();
  ASSERT_TRUE(model->ForwardBackward(small, 1.0f, {}).ok());
  EXPECT_EQ(Grads(*model), fresh);
}

}  // namespace
}  // namespace gradsync::nn

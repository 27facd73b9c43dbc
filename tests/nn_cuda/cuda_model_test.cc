// The GPU transformer against the CPU one (both flavours): layout and initial values, loss and
// every gradient in fp32, the ready callbacks, accumulation, gradients given back to the device,
// bf16 mode, determinism, errors.
#include "gradsync/nn/cuda/cuda_model.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cuda_model_util.h"

namespace gradsync::nn::cuda::testing {
namespace {

// fp32 on both sides; the GPU sums in other orders (cuBLASLt, tree reductions), so values agree
// to fp32 rounding amplified a little through the layers.
constexpr Tolerance kFp32Tol{1e-4, 1e-3, 1e-4};

class CudaTransformerTest : public CudaModelTest, public ::testing::WithParamInterface<std::string> {
 protected:
  gradsync::v1::JobSpec Spec() const { return TinySpec(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(Flavours, CudaTransformerTest, ::testing::Values("gpt2", "llama"));

TEST_P(CudaTransformerTest, LayoutAndInitialValuesAreTheCpuModels) {
  auto cpu = MustCreateCpu(Spec());
  auto gpu = MustCreateCuda(Spec(), Options(Precision::kFp32));
  ASSERT_TRUE(cpu && gpu);
  EXPECT_TRUE(gpu->on_device());
  EXPECT_FALSE(cpu->on_device());
  ASSERT_EQ(gpu->layout().size(), cpu->layout().size());
  EXPECT_EQ(gpu->layout().Hash(), cpu->layout().Hash());
  for (int i = 0; i < cpu->layout().size(); ++i) {
    EXPECT_EQ(gpu->layout().param(i).weight_decay, cpu->layout().param(i).weight_decay) << i;
  }
  std::vector<float> params = ToHost(gpu->params());
  ASSERT_EQ(params.size(), cpu->params().size());
  EXPECT_EQ(std::memcmp(params.data(), cpu->params().data(), params.size() * sizeof(float)), 0);

  cpu->InitParams(7);
  gpu->InitParams(7);
  params = ToHost(gpu->params());
  EXPECT_EQ(std::memcmp(params.data(), cpu->params().data(), params.size() * sizeof(float)), 0);
  const std::vector<float> grads = ToHost(gpu->grads());
  for (float g : grads) ASSERT_EQ(g, 0.0f);
}

// Loss, count, every parameter's gradient, Evaluate and Predict against the CPU model, for a
// batch with ignored targets and a batch of one shorter sequence.
TEST_P(CudaTransformerTest, Fp32MatchesCpu) {
  auto cpu = MustCreateCpu(Spec());
  auto gpu = MustCreateCuda(Spec(), Options(Precision::kFp32));
  ASSERT_TRUE(cpu && gpu);
  const std::vector<std::pair<Batch, std::string>> batches = {
      {RandomBatch(3, 16, 256, 1, /*ignore_every=*/5), "3 x 16 with ignored targets"},
      {RandomBatch(1, 7, 256, 2), "1 x 7"}};
  for (const auto& [batch, what] : batches) {
    SCOPED_TRACE(what);
    cpu->ZeroGrads();
    gpu->ZeroGrads();
    const float scale = 1.0f / static_cast<float>(Count(batch));
    absl::StatusOr<LossSum> want = cpu->ForwardBackward(batch, scale, nullptr);
    absl::StatusOr<LossSum> got = gpu->ForwardBackward(batch, scale, nullptr);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->count, want->count);
    EXPECT_EQ(got->count, Count(batch));
    EXPECT_NEAR(got->sum, want->sum, 1e-5 * std::abs(want->sum));

    const std::vector<float> grads = ToHost(gpu->grads());
    for (int i = 0; i < cpu->layout().size(); ++i) {
      const ParamInfo& p = cpu->layout().param(i);
      EXPECT_TRUE(Close(std::span<const float>(grads).subspan(p.offset, p.numel),
                        cpu->layout().View(std::span<const float>(cpu->grads()), i), kFp32Tol, p.name));
    }

    absl::StatusOr<LossSum> eval_want = cpu->Evaluate(batch);
    absl::StatusOr<LossSum> eval_got = gpu->Evaluate(batch);
    ASSERT_TRUE(eval_got.ok()) << eval_got.status();
    EXPECT_EQ(eval_got->count, eval_want->count);
    EXPECT_NEAR(eval_got->sum, eval_want->sum, 1e-5 * std::abs(eval_want->sum));

    absl::StatusOr<std::vector<float>> logits_want = cpu->Predict(batch);
    absl::StatusOr<std::vector<float>> logits_got = gpu->Predict(batch);
    ASSERT_TRUE(logits_got.ok()) << logits_got.status();
    EXPECT_TRUE(Close(*logits_got, *logits_want, kFp32Tol, "logits"));
  }
}

// A loss mask as supervised fine-tuning has it (`data prepare --chat`): each sequence's prompt
// masked (its targets the ignore index), its reply kept. The GPU's loss, count and gradients under
// the masked mean's scale are the CPU's, and a batch masked whole adds no loss and no gradient.
TEST_P(CudaTransformerTest, AChatMaskedBatchIsTheMaskedMeanOnTheGpuAsOnTheCpu) {
  auto cpu = MustCreateCpu(Spec());
  auto gpu = MustCreateCuda(Spec(), Options(Precision::kFp32));
  ASSERT_TRUE(cpu && gpu);
  Batch batch = RandomBatch(2, 16, 256, 9);
  for (int64_t s = 0; s < 2; ++s) {
    for (int64_t t = 0; t < 10; ++t) batch.targets[s * 16 + t] = -1;  // the prompt
  }
  ASSERT_EQ(Count(batch), 12);
  cpu->ZeroGrads();
  gpu->ZeroGrads();
  const float scale = 1.0f / 12.0f;
  absl::StatusOr<LossSum> want = cpu->ForwardBackward(batch, scale, nullptr);
  absl::StatusOr<LossSum> got = gpu->ForwardBackward(batch, scale, nullptr);
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(got->count, 12);
  EXPECT_NEAR(got->sum, want->sum, 1e-5 * std::abs(want->sum));
  const std::vector<float> grads = ToHost(gpu->grads());
  for (int i = 0; i < cpu->layout().size(); ++i) {
    const ParamInfo& p = cpu->layout().param(i);
    EXPECT_TRUE(Close(std::span<const float>(grads).subspan(p.offset, p.numel),
                      cpu->layout().View(std::span<const float>(cpu->grads()), i), kFp32Tol, p.name));
  }

  for (int32_t& t : batch.targets) t = -1;
  gpu->ZeroGrads();
  absl::StatusOr<LossSum> none = gpu->ForwardBackward(batch, 1.0f, nullptr);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->count, 0);
  EXPECT_EQ(none->sum, 0.0);
  for (float g : ToHost(gpu->grads())) ASSERT_EQ(g, 0.0f) << "a masked target moved a gradient";
}

// One call per layer, last layer first, covering every parameter exactly once.
TEST_P(CudaTransformerTest, ReadyCallbacksCoverEveryParameterOnceInReverse) {
  for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
    auto model = MustCreateCuda(Spec(), Options(precision));
    ASSERT_TRUE(model);
    std::vector<std::pair<int, int>> ranges;
    absl::StatusOr<LossSum> loss = model->ForwardBackward(
        RandomBatch(2, 16, 256, 3), 1.0f, [&](int first, int last) { ranges.emplace_back(first, last); });
    ASSERT_TRUE(loss.ok()) << loss.status();
    // final norm, 2 blocks, embeddings
    ASSERT_EQ(ranges.size(), 4u);
    int end = model->layout().size();
    for (const auto& [first, last] : ranges) {
      EXPECT_EQ(last, end);
      EXPECT_LT(first, last);
      end = first;
    }
    EXPECT_EQ(end, 0);
  }
}

// Two micro-steps add: grads after two calls on one batch are twice those after one.
TEST_P(CudaTransformerTest, GradientsAccumulate) {
  for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
    auto gpu = MustCreateCuda(Spec(), Options(precision));
    ASSERT_TRUE(gpu);
    const Batch batch = RandomBatch(2, 16, 256, 4);
    ASSERT_TRUE(gpu->ForwardBackward(batch, 0.01f, nullptr).ok());
    std::vector<float> once = ToHost(gpu->grads());
    ASSERT_TRUE(gpu->ForwardBackward(batch, 0.01f, nullptr).ok());
    const std::vector<float> twice = ToHost(gpu->grads());
    for (float& g : once) g *= 2.0f;
    EXPECT_TRUE(Close(twice, once, {1e-6, 1e-5, 1e-5}, "accumulated grads"));
  }
}

// ddp.sharding "gradients": gradients given back to the device (DiscardGrads, DevicePages) come
// back mapped and zeroed where backward writes them, so the same batch gives the very bits it
// gives after ZeroGrads, micro-steps still accumulate, and an empty batch maps every range the
// reducer will read.
TEST_P(CudaTransformerTest, DiscardedGradientsComeBackZeroedWhereBackwardWrites) {
  for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
    SCOPED_TRACE(precision == Precision::kFp32 ? "fp32" : "bf16");
    auto gpu = MustCreateCuda(Spec(), Options(precision));
    ASSERT_TRUE(gpu);
    const int64_t total = gpu->layout().total_numel();
    const Batch batch = RandomBatch(2, 16, 256, 4);
    gpu->ZeroGrads();
    ASSERT_TRUE(gpu->ForwardBackward(batch, 0.01f, nullptr).ok());
    const std::vector<float> once = ToHost(gpu->grads());
    ASSERT_TRUE(gpu->ForwardBackward(batch, 0.01f, nullptr).ok());
    const std::vector<float> twice = ToHost(gpu->grads());
    const int64_t mapped = gpu->ResidentGradBytes();
    EXPECT_GE(mapped, total * 4);

    ASSERT_EQ(gpu->Synchronize(), absl::OkStatus());
    gpu->DiscardGrads(0, total);
    EXPECT_EQ(gpu->ResidentGradBytes(), 0);
    ASSERT_TRUE(gpu->ForwardBackward(batch, 0.01f, nullptr).ok());
    EXPECT_EQ(gpu->ResidentGradBytes(), mapped);
    std::vector<float> again = ToHost(gpu->grads());
    EXPECT_EQ(std::memcmp(again.data(), once.data(), again.size() * sizeof(float)), 0);
    ASSERT_TRUE(gpu->ForwardBackward(batch, 0.01f, nullptr).ok());
    again = ToHost(gpu->grads());
    EXPECT_EQ(std::memcmp(again.data(), twice.data(), again.size() * sizeof(float)), 0);

    ASSERT_EQ(gpu->Synchronize(), absl::OkStatus());
    gpu->DiscardGrads(0, total);
    Batch empty;
    ASSERT_TRUE(gpu->ForwardBackward(empty, 0.01f, nullptr).ok());
    EXPECT_EQ(gpu->ResidentGradBytes(), mapped);
    for (float g : ToHost(gpu->grads())) ASSERT_EQ(g, 0.0f);
  }
}

// bf16 mixed precision: the loss within 2e-2 of fp32's, the gradients in the same direction.
TEST_P(CudaTransformerTest, Bf16IsCloseToFp32) {
  auto fp32 = MustCreateCuda(Spec(), Options(Precision::kFp32));
  auto bf16 = MustCreateCuda(Spec(), Options(Precision::kBf16));
  ASSERT_TRUE(fp32 && bf16);
  EXPECT_EQ(bf16->precision(), Precision::kBf16);
  const Batch batch = RandomBatch(3, 16, 256, 5, /*ignore_every=*/7);
  const float scale = 1.0f / static_cast<float>(Count(batch));
  absl::StatusOr<LossSum> want = fp32->ForwardBackward(batch, scale, nullptr);
  absl::StatusOr<LossSum> got = bf16->ForwardBackward(batch, scale, nullptr);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->count, want->count);
  const double mean_want = want->sum / static_cast<double>(want->count);
  const double mean_got = got->sum / static_cast<double>(got->count);
  EXPECT_NEAR(mean_got, mean_want, 2e-2 * mean_want);
  // The whole gradient, norm-wise only (bf16 weights, activations and per-layer gradients carry
  // 8 mantissa bits; single elements may differ by more).
  constexpr Tolerance kNormOnly{1e-1, 1e30, 1e30};
  EXPECT_TRUE(Close(ToHost(bf16->grads()), ToHost(fp32->grads()), kNormOnly, "grads"));
}

// bf16 attention through tensor-core products (which keep the probabilities), through the
// tensor-core FlashAttention kernels, and through the exact fused kernels compute the same
// function: the loss and the gradients agree to bf16's precision.
TEST_P(CudaTransformerTest, TensorCoreAttentionMatchesTheFusedKernels) {
  CudaModelOptions fused_options = Options(Precision::kBf16);
  fused_options.attention = AttentionKernels::kFused;
  auto fused = MustCreateCuda(Spec(), fused_options);
  ASSERT_TRUE(fused);
  const Batch batch = RandomBatch(3, 16, 256, 8, /*ignore_every=*/5);
  const float scale = 1.0f / static_cast<float>(Count(batch));
  absl::StatusOr<LossSum> want = fused->ForwardBackward(batch, scale, nullptr);
  ASSERT_TRUE(want.ok()) << want.status();
  const std::vector<float> want_grads = ToHost(fused->grads());
  for (AttentionKernels kernels : {AttentionKernels::kProducts, AttentionKernels::kFlash}) {
    SCOPED_TRACE(AttentionKernelsName(kernels));
    CudaModelOptions options = Options(Precision::kBf16);
    options.attention = kernels;
    auto model = MustCreateCuda(Spec(), options);
    ASSERT_TRUE(model);
    absl::StatusOr<LossSum> got = model->ForwardBackward(batch, scale, nullptr);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_NEAR(got->sum / static_cast<double>(got->count), want->sum / static_cast<double>(want->count),
                1e-2 * want->sum / static_cast<double>(want->count));
    constexpr Tolerance kNormOnly{5e-2, 1e30, 1e30};
    EXPECT_TRUE(Close(ToHost(model->grads()), want_grads, kNormOnly, "grads"));
  }
}

// Two fresh models, and two passes of one model, give bitwise identical gradients and losses.
TEST_P(CudaTransformerTest, Deterministic) {
  const std::pair<Precision, AttentionKernels> cases[] = {{Precision::kFp32, AttentionKernels::kFused},
                                                          {Precision::kBf16, AttentionKernels::kProducts},
                                                          {Precision::kBf16, AttentionKernels::kFlash}};
  for (const auto& [precision, kernels] : cases) {
    SCOPED_TRACE(AttentionKernelsName(kernels));
    const Batch batch = RandomBatch(4, 16, 256, 6, /*ignore_every=*/3);
    std::vector<std::vector<float>> runs;
    std::vector<double> losses;
    CudaModelOptions options = Options(precision);
    options.attention = kernels;
    auto a = MustCreateCuda(Spec(), options);
    auto b = MustCreateCuda(Spec(), options);
    ASSERT_TRUE(a && b);
    for (CudaModel* model : {a.get(), b.get(), a.get()}) {
      model->ZeroGrads();
      absl::StatusOr<LossSum> loss = model->ForwardBackward(batch, 0.5f, nullptr);
      ASSERT_TRUE(loss.ok()) << loss.status();
      losses.push_back(loss->sum);
      runs.push_back(ToHost(model->grads()));
    }
    for (size_t r = 1; r < runs.size(); ++r) {
      EXPECT_EQ(losses[r], losses[0]);
      ASSERT_EQ(runs[r].size(), runs[0].size());
      EXPECT_EQ(std::memcmp(runs[r].data(), runs[0].data(), runs[0].size() * sizeof(float)), 0)
          << "run " << r << " differs";
    }
  }
}

TEST_P(CudaTransformerTest, EmptyBatchReportsEveryLayer) {
  auto gpu = MustCreateCuda(Spec(), Options(Precision::kFp32));
  ASSERT_TRUE(gpu);
  int calls = 0;
  absl::StatusOr<LossSum> loss = gpu->ForwardBackward(Batch{}, 1.0f, [&](int, int) { ++calls; });
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_EQ(loss->count, 0);
  EXPECT_EQ(calls, 4);
}

TEST_F(CudaModelTest, RejectsWhatItCannotRun) {
  gradsync::v1::JobSpec mlp;
  mlp.mutable_model()->set_preset("mlp");
  mlp.mutable_data()->mutable_synthetic()->set_input_dim(4);
  mlp.mutable_data()->mutable_synthetic()->set_num_classes(2);
  absl::StatusOr<std::unique_ptr<CudaModel>> model = CudaModelOf(mlp, Options(Precision::kFp32));
  ASSERT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("model.preset"), std::string::npos);

  gradsync::v1::JobSpec narrow = TinySpec("gpt2");
  narrow.mutable_model()->mutable_transformer()->set_width(64);  // head dim 16
  model = CudaModelOf(narrow, Options(Precision::kFp32));
  ASSERT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("model.transformer.heads"), std::string::npos);

  auto gpu = MustCreateCuda(TinySpec("llama"), Options(Precision::kFp32));
  ASSERT_TRUE(gpu);
  Batch bad = RandomBatch(1, 4, 256, 8);
  bad.tokens[2] = 256;
  EXPECT_EQ(gpu->ForwardBackward(bad, 1.0f, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu->Predict(RandomBatch(1, 17, 256, 9)).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync::nn::cuda::testing

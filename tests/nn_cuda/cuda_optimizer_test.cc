// The device optimizer step against libs/nn's CPU one, and bf16 training on a repeated batch.
#include "gradsync/nn/cuda/cuda_optimizer.h"

#include <gtest/gtest.h>

#include <vector>

#include "cuda_model_util.h"
#include "gradsync/nn/optimizer.h"

namespace gradsync::nn::cuda::testing {
namespace {

// Clip + AdamW (with weight decay, so the per-parameter decay flags matter) on the GPU model's
// gradients, against GlobalNorm / ClipGlobalNorm / AdamW on host copies of the same values.
TEST_F(CudaModelTest, StepMatchesCpu) {
  auto gpu = MustCreateCuda(TinySpec("gpt2"), Options(Precision::kFp32));
  ASSERT_TRUE(gpu);
  const AdamWConfig config{0.9, 0.95, 1e-8, 0.1};
  auto clip = CudaGradClip::Create(stream_);
  auto adamw = CudaAdamW::Create(gpu->layout(), config, stream_);
  ASSERT_TRUE(clip.ok()) << clip.status();
  ASSERT_TRUE(adamw.ok()) << adamw.status();
  AdamW cpu_adamw(gpu->layout(), config);
  std::vector<float> params = ToHost(gpu->params());

  for (int step = 0; step < 3; ++step) {
    gpu->ZeroGrads();
    const Batch batch = RandomBatch(2, 16, 256, 10 + step);
    ASSERT_TRUE(gpu->ForwardBackward(batch, 1.0f / Count(batch), nullptr).ok());
    std::vector<float> grads = ToHost(gpu->grads());
    const double max_norm = step == 1 ? 1e-3 : 0.0;  // step 1 clips, the others do not

    ASSERT_TRUE((*clip)->Compute(gpu->grads(), max_norm).ok());
    ASSERT_TRUE((*adamw)->Step(gpu->params(), gpu->grads(), 1e-3, (*clip)->scale()).ok());
    absl::StatusOr<double> norm = (*clip)->ReadNorm();
    ASSERT_TRUE(norm.ok()) << norm.status();

    const double want_norm = ClipGlobalNorm(grads, max_norm);
    cpu_adamw.Step(params, grads, 1e-3);
    EXPECT_NEAR(*norm, want_norm, 1e-5 * want_norm);
    EXPECT_TRUE(Close(ToHost(gpu->params()), params, {1e-6, 1e-5, 1e-5}, "params"));
  }
  EXPECT_EQ((*adamw)->step_count(), 3);
  EXPECT_TRUE(Close(ToHost((*adamw)->first_moment()), cpu_adamw.first_moment(), {1e-5, 1e-4, 1e-5}, "m"));
}

// A few clipped AdamW steps in bf16 mode reduce the loss on a repeated batch.
TEST_F(CudaModelTest, Bf16TrainingReducesLoss) {
  for (const char* flavour : {"gpt2", "llama"}) {
    SCOPED_TRACE(flavour);
    auto gpu = MustCreateCuda(TinySpec(flavour), Options(Precision::kBf16));
    ASSERT_TRUE(gpu);
    auto clip = CudaGradClip::Create(stream_);
    auto adamw = CudaAdamW::Create(gpu->layout(), AdamWConfig{0.9, 0.95, 1e-8, 0.0}, stream_);
    ASSERT_TRUE(clip.ok() && adamw.ok());
    const Batch batch = RandomBatch(4, 16, 256, 20);
    const float scale = 1.0f / static_cast<float>(Count(batch));
    std::vector<double> losses;
    for (int step = 0; step < 10; ++step) {
      gpu->ZeroGrads();
      absl::StatusOr<LossSum> loss = gpu->ForwardBackward(batch, scale, nullptr);
      ASSERT_TRUE(loss.ok()) << loss.status();
      losses.push_back(loss->sum / static_cast<double>(loss->count));
      ASSERT_TRUE((*clip)->Compute(gpu->grads(), 1.0).ok());
      ASSERT_TRUE((*adamw)->Step(gpu->params(), gpu->grads(), 3e-3, (*clip)->scale()).ok());
    }
    EXPECT_LT(losses.back(), 0.9 * losses.front()) << "first " << losses.front() << ", last " << losses.back();
  }
}

}  // namespace
}  // namespace gradsync::nn::cuda::testing

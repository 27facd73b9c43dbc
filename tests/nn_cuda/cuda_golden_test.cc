// The golden run (tests/nn/golden) on the GPU: the CUDA model in fp32 with the device clipping
// and AdamW against PyTorch's losses, gradient norms and final parameters; bf16 against its
// losses within mixed precision's error. Skips without a device.
#include <algorithm>

#include "cuda_model_util.h"
#include "golden_util.h"
#include "gradsync/nn/cuda/cuda_optimizer.h"

namespace gradsync::nn::cuda {
namespace {

class CudaGolden : public testing::CudaModelTest {
 protected:
  // Runs the golden steps; returns the final parameters (host copy).
  std::vector<float> Run(Precision precision, const golden::Struct& g, std::vector<double>* losses,
                         std::vector<double>* norms) {
    auto model = CreateCudaModel(golden::Spec(g), Options(precision));
    EXPECT_TRUE(model.ok()) << model.status();
    if (!model.ok()) return {};
    CudaModel& m = **model;
    const std::vector<float> init = golden::InitialParams(m.layout());
    EXPECT_EQ(cudaMemcpy(m.params().data(), init.data(), init.size() * sizeof(float), cudaMemcpyHostToDevice),
              cudaSuccess);
    const std::vector<double> betas = golden::Nums(g, "betas");
    auto clip = CudaGradClip::Create(stream_);
    auto adamw = CudaAdamW::Create(m.layout(), {betas[0], betas[1], golden::Num(g, "eps"), golden::Num(g, "weightDecay")},
                                   stream_);
    EXPECT_TRUE(clip.ok() && adamw.ok());
    if (!clip.ok() || !adamw.ok()) return {};
    const size_t steps = golden::Nums(g, "losses").size();
    for (size_t step = 0; step < steps; ++step) {
      const Batch batch = golden::MakeBatch(g, static_cast<int64_t>(step));
      m.ZeroGrads();
      auto loss = m.ForwardBackward(batch, 1.0f / static_cast<float>(batch.tokens.size()), {});
      EXPECT_TRUE(loss.ok()) << loss.status();
      if (!loss.ok()) return {};
      EXPECT_TRUE((*clip)->Compute(m.grads(), golden::Num(g, "gradClip")).ok());
      EXPECT_TRUE((*adamw)->Step(m.params(), m.grads(), golden::Num(g, "lr"), (*clip)->scale()).ok());
      auto norm = (*clip)->ReadNorm();
      EXPECT_TRUE(norm.ok()) << norm.status();
      losses->push_back(loss->sum / static_cast<double>(loss->count));
      norms->push_back(norm.ok() ? *norm : 0);
    }
    std::vector<float> params(m.params().size());
    EXPECT_EQ(cudaMemcpy(params.data(), m.params().data(), params.size() * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return params;
  }
};

TEST_F(CudaGolden, Fp32MatchesPyTorch) {
  const golden::Struct g = golden::Load();
  std::vector<double> losses, norms;
  const std::vector<float> params = Run(Precision::kFp32, g, &losses, &norms);
  ASSERT_EQ(losses.size(), golden::Nums(g, "losses").size());
  // The GPU sums in other orders than both the CPU and PyTorch, and eight steps at lr 1e-2 with
  // every gradient clipped amplify those last-bit differences (measured on an H100: 1.3e-5 of the
  // loss by step 7, 3e-4 in the weights): four times the CPU's bounds.
  for (size_t step = 0; step < losses.size(); ++step) golden::ExpectStep(g, step, losses[step], norms[step], 4.0);
  auto layout = CreateModel(golden::Spec(g));
  ASSERT_TRUE(layout.ok());
  int compared = 0;
  EXPECT_LT(golden::FinalParamDifference(g, (*layout)->layout(), params, &compared), 1e-3);
  EXPECT_GT(compared, 400);
}

TEST_F(CudaGolden, Bf16FollowsPyTorchWithinMixedPrecision) {
  const golden::Struct g = golden::Load();
  std::vector<double> losses, norms;
  Run(Precision::kBf16, g, &losses, &norms);
  const std::vector<double> want = golden::Nums(g, "losses"), want_norms = golden::Nums(g, "gradNorms");
  ASSERT_EQ(losses.size(), want.size());
  // bf16 activations and weights (8 bits of mantissa). The first forward and backward see the
  // weights PyTorch saw: the loss within 0.5% (a uniform prediction, ln 64, is 0.9% off) and the
  // gradient norm within 5%.
  EXPECT_NEAR(losses[0], want[0], 0.005 * want[0]);
  EXPECT_NEAR(norms[0], want_norms[0], 0.05 * want_norms[0]);
  // Then every AdamW step (lr 1e-2, each gradient clipped to norm 1) moves each weight by about
  // lr whatever the rounding, on random tokens whose loss hovers near ln 64: the trajectories
  // part. The next two steps within 1%, all eight within 5%; a broken bf16 path lands at NaN or
  // far off.
  for (size_t step = 0; step < want.size(); ++step) {
    EXPECT_NEAR(losses[step], want[step], (step < 3 ? 0.01 : 0.05) * want[step]) << "loss of step " << step;
  }
}

}  // namespace
}  // namespace gradsync::nn::cuda

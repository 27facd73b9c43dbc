// AdamW against kernels/cpu/adamw.h; global norm, clip factor and gradient scaling against the
// formulas of libs/nn (GlobalNorm, ClipGlobalNorm), computed here in double.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gradsync/kernels/cpu/adamw.h"
#include "gradsync/kernels/cuda/adamw.cuh"
#include "gradsync/kernels/cuda/global_norm.cuh"
#include "test_util.h"

namespace gradsync::kernels::cuda {
namespace {

using testing::bf16;
using testing::Close;
using testing::Download;
using testing::Random;
using testing::TolFor;
using testing::Upload;

// The gradient type varies; master weights and moments are fp32 in both.
template <typename TG>
class OptimizerTest : public testing::CudaTest {};
TYPED_TEST_SUITE(OptimizerTest, testing::Dtypes);

// Three steps in a row (the bias corrections change with t), with and without decay, with a
// device-side gradient scale; the bf16 model copy is the rounded master weight.
TYPED_TEST(OptimizerTest, AdamWMatchesCpu) {
  using TG = TypeParam;
  for (const int64_t n : {1, 1000, 4097}) {
    for (const bool decay : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " decay=" << decay);
      const uint32_t seed = static_cast<uint32_t>(n + decay);
      std::vector<float> params = Random<float>(n, seed), m(n, 0.0f), v(n, 0.0f);
      const float grad_scale = 0.75f;
      DeviceBuffer<float> d_params, d_m, d_v, d_scale;
      DeviceBuffer<bf16> d_model;
      GRADSYNC_ASSIGN_OR_FAIL(d_params, Upload<float>(params));
      GRADSYNC_ASSIGN_OR_FAIL(d_m, Upload<float>(m));
      GRADSYNC_ASSIGN_OR_FAIL(d_v, Upload<float>(v));
      GRADSYNC_ASSIGN_OR_FAIL(d_scale, Upload<float>({grad_scale}));
      GRADSYNC_ASSIGN_OR_FAIL(d_model, testing::Poisoned<bf16>(n));
      for (int64_t step = 1; step <= 3; ++step) {
        const std::vector<float> grads = Random<TG>(n, seed + 100 * step, -0.1f, 0.1f);
        std::vector<float> scaled(n);
        for (int64_t i = 0; i < n; ++i) scaled[i] = grads[i] * grad_scale;
        AdamWHyper hyper;
        hyper.lr = 1e-2;
        hyper.weight_decay = 0.1;
        hyper.step = step;
        hyper.decay = decay;
        cpu::AdamWUpdate(params.data(), scaled.data(), m.data(), v.data(), n, hyper);

        DeviceBuffer<TG> d_grads;
        GRADSYNC_ASSIGN_OR_FAIL(d_grads, Upload<TG>(grads));
        GRADSYNC_ASSERT_OK(AdamWUpdate<TG>(d_params.data(), d_model.data(), d_grads.data(), d_m.data(), d_v.data(), n,
                                           hyper, d_scale.data(), this->stream_));
        ASSERT_TRUE(this->Sync());
      }
      std::vector<float> got;
      GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_params));
      EXPECT_TRUE(Close(got, params, TolFor<float>(), "params"));
      GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_m));
      EXPECT_TRUE(Close(got, m, TolFor<float>(), "m"));
      GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_v));
      EXPECT_TRUE(Close(got, v, TolFor<float>(), "v"));
      GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_model));
      EXPECT_TRUE(Close(got, testing::RoundAll<bf16>(params), TolFor<bf16>(), "model copy"));
    }
  }
}

// Norm of two ranges accumulated in one value, the clip factor, and the scaled gradients.
TYPED_TEST(OptimizerTest, GlobalNormAndClipMatchReference) {
  using T = TypeParam;
  for (const int64_t n : {int64_t{1}, int64_t{1000}, (int64_t{1} << 20) + 3}) {
    for (const double max_norm : {0.0, 1.0, 1e9}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " max_norm=" << max_norm);
      const int64_t first = n / 3;
      const std::vector<float> grads = Random<T>(n, static_cast<uint32_t>(n));
      double sum_sq = 0.0;
      for (const float g : grads) sum_sq += static_cast<double>(g) * g;
      const double norm = std::sqrt(sum_sq);
      const float scale = (max_norm > 0.0 && norm > max_norm) ? static_cast<float>(max_norm / norm) : 1.0f;
      std::vector<float> want_scaled = grads;
      for (float& g : want_scaled) g *= scale;

      DeviceBuffer<T> d_grads;
      DeviceBuffer<float> d_norm_sq, d_scale, d_norm, d_scratch;
      GRADSYNC_ASSIGN_OR_FAIL(d_grads, Upload<T>(grads));
      GRADSYNC_ASSIGN_OR_FAIL(d_norm_sq, testing::Poisoned<float>(1));
      GRADSYNC_ASSIGN_OR_FAIL(d_scale, testing::Poisoned<float>(1));
      GRADSYNC_ASSIGN_OR_FAIL(d_norm, testing::Poisoned<float>(1));
      GRADSYNC_ASSIGN_OR_FAIL(d_scratch, DeviceBuffer<float>::Allocate(kGlobalNormPartials));
      GRADSYNC_ASSERT_OK(
          GlobalNormSquared<T>(d_norm_sq.data(), d_grads.data(), first, false, d_scratch.data(), this->stream_));
      GRADSYNC_ASSERT_OK(GlobalNormSquared<T>(d_norm_sq.data(), d_grads.data() + first, n - first, true,
                                              d_scratch.data(), this->stream_));
      GRADSYNC_ASSERT_OK(ClipScale(d_scale.data(), d_norm.data(), d_norm_sq.data(), max_norm, this->stream_));
      GRADSYNC_ASSERT_OK(ScaleGradients<T>(d_grads.data(), n, d_scale.data(), this->stream_));
      ASSERT_TRUE(this->Sync());
      std::vector<float> got;
      GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_norm_sq));
      EXPECT_TRUE(Close(got, {static_cast<float>(sum_sq)}, TolFor<float>(), "norm_sq"));
      GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_norm));
      EXPECT_TRUE(Close(got, {static_cast<float>(norm)}, TolFor<float>(), "norm"));
      GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_scale));
      EXPECT_TRUE(Close(got, {scale}, TolFor<float>(), "scale"));
      GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_grads));
      EXPECT_TRUE(Close(got, want_scaled, TolFor<T>(), "scaled grads"));
    }
  }
}

}  // namespace
}  // namespace gradsync::kernels::cuda

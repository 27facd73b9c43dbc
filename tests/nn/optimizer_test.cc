#include "gradsync/nn/optimizer.h"

#include <cmath>
#include <vector>

#include "gradsync/nn/param_layout.h"
#include "gtest/gtest.h"

namespace gradsync::nn {
namespace {

ParamLayout WeightAndBias() {
  ParamLayout layout;
  layout.Add("w", {1}, /*weight_decay=*/true);
  layout.Add("b", {1}, /*weight_decay=*/false);
  return layout;
}

TEST(AdamWTest, TwoStepsMatchHandComputation) {
  const ParamLayout layout = WeightAndBias();
  AdamWConfig config;
  config.beta1 = 0.9;
  config.beta2 = 0.99;
  config.eps = 1e-8;
  config.weight_decay = 0.1;
  AdamW adam(layout, config);
  std::vector<float> params = {1.0f, 1.0f};
  constexpr double kLr = 0.01;

  // Step 1, g = 0.5 for both:
  //   m = 0.05, v = 0.0025, m_hat = 0.05 / 0.1 = 0.5, v_hat = 0.0025 / 0.01 = 0.25
  //   adam term = 0.5 / (0.5 + 1e-8) = 0.99999998
  //   w = 1 - 0.01 * (0.99999998 + 0.1 * 1) = 0.9890000002
  //   b = 1 - 0.01 * 0.99999998            = 0.9900000002
  adam.Step(params, std::vector<float>{0.5f, 0.5f}, kLr);
  EXPECT_EQ(adam.step_count(), 1);
  EXPECT_NEAR(params[0], 0.9890000002, 1e-6);
  EXPECT_NEAR(params[1], 0.9900000002, 1e-6);
  EXPECT_NEAR(adam.first_moment()[0], 0.05, 1e-7);
  EXPECT_NEAR(adam.second_moment()[0], 0.0025, 1e-8);

  // Step 2, g = -0.25 for both:
  //   m = 0.9 * 0.05 - 0.025 = 0.02,          m_hat = 0.02 / 0.19     = 0.105263158
  //   v = 0.99 * 0.0025 + 0.000625 = 0.0031,  v_hat = 0.0031 / 0.0199 = 0.155778894
  //   adam term = 0.105263158 / (0.394688350 + 1e-8) = 0.2666994
  const double m_hat = 0.02 / (1 - 0.9 * 0.9);
  const double v_hat = 0.0031 / (1 - 0.99 * 0.99);
  const double adam_term = m_hat / (std::sqrt(v_hat) + 1e-8);
  const double w1 = 0.9890000002, b1 = 0.9900000002;
  adam.Step(params, std::vector<float>{-0.25f, -0.25f}, kLr);
  EXPECT_NEAR(adam_term, 0.2666994, 1e-7);
  EXPECT_NEAR(params[0], w1 - kLr * (adam_term + 0.1 * w1), 1e-6);
  EXPECT_NEAR(params[1], b1 - kLr * adam_term, 1e-6);
}

TEST(AdamWTest, DecaysWeightsButNotBiases) {
  const ParamLayout layout = WeightAndBias();
  AdamWConfig config;
  config.weight_decay = 0.5;
  AdamW adam(layout, config);
  std::vector<float> params = {2.0f, 2.0f};
  // A zero gradient leaves only the decay: w -= lr * wd * w.
  adam.Step(params, std::vector<float>{0.0f, 0.0f}, 0.1);
  EXPECT_FLOAT_EQ(params[0], 2.0f - 0.1f * 0.5f * 2.0f);
  EXPECT_FLOAT_EQ(params[1], 2.0f);
}

TEST(AdamWTest, IsDeterministic) {
  const ParamLayout layout = WeightAndBias();
  AdamW a(layout, AdamWConfig{}), b(layout, AdamWConfig{});
  std::vector<float> pa = {0.3f, -0.7f}, pb = pa;
  for (int i = 0; i < 5; ++i) {
    const std::vector<float> g = {0.1f * i - 0.2f, 0.05f * i};
    a.Step(pa, g, 1e-2);
    b.Step(pb, g, 1e-2);
  }
  EXPECT_EQ(pa, pb);
}

TEST(ClipTest, GlobalNorm) {
  EXPECT_DOUBLE_EQ(GlobalNorm(std::vector<float>{3.0f, 4.0f}), 5.0);
  EXPECT_DOUBLE_EQ(GlobalNorm(std::vector<float>{}), 0.0);
}

TEST(ClipTest, GlobalNormOfRaggedSizesMatchesALongDoubleSum) {
  // Sizes around the 8 interleaved partial sums and their remainder, and a large one.
  for (int n : {1, 7, 8, 9, 15, 17, 1000003}) {
    std::vector<float> g(n);
    long double exact = 0;
    for (int i = 0; i < n; ++i) {
      g[i] = std::ldexp(static_cast<float>((i * 7919) % 2001 - 1000) / 1000.0f, (i % 41) - 20);
      exact += static_cast<long double>(g[i]) * g[i];
    }
    const double want = std::sqrt(static_cast<double>(exact));
    EXPECT_NEAR(GlobalNorm(g), want, 1e-12 * want) << "n = " << n;  // double rounding over n terms
  }
}

TEST(ClipTest, ScalesDownToMaxNorm) {
  std::vector<float> g = {3.0f, 0.0f, 4.0f};
  EXPECT_DOUBLE_EQ(ClipGlobalNorm(g, 1.0), 5.0);
  EXPECT_FLOAT_EQ(g[0], 0.6f);
  EXPECT_FLOAT_EQ(g[2], 0.8f);
  EXPECT_NEAR(GlobalNorm(g), 1.0, 1e-6);
}

TEST(ClipTest, LeavesSmallOrUnclippedGradientsAlone) {
  std::vector<float> g = {3.0f, 4.0f};
  EXPECT_DOUBLE_EQ(ClipGlobalNorm(g, 10.0), 5.0);
  EXPECT_DOUBLE_EQ(ClipGlobalNorm(g, 0.0), 5.0);
  EXPECT_DOUBLE_EQ(ClipGlobalNorm(g, -1.0), 5.0);
  EXPECT_EQ(g, (std::vector<float>{3.0f, 4.0f}));
}

TEST(LrScheduleTest, LinearWarmup) {
  const LrSchedule s{.peak_lr = 1e-3, .warmup_steps = 10, .total_steps = 100};
  EXPECT_DOUBLE_EQ(s.At(0), 1e-4);
  EXPECT_DOUBLE_EQ(s.At(4), 5e-4);
  EXPECT_DOUBLE_EQ(s.At(9), 1e-3);
}

TEST(LrScheduleTest, CosineFromPeakToMinimumAtLastStep) {
  const LrSchedule s{.peak_lr = 1e-3, .warmup_steps = 10, .total_steps = 111, .cosine = true, .min_lr_ratio = 0.1};
  EXPECT_DOUBLE_EQ(s.At(10), 1e-3);
  EXPECT_NEAR(s.At(60), 0.55e-3, 1e-12);  // halfway: the mean of peak and minimum
  EXPECT_NEAR(s.At(110), 1e-4, 1e-12);
  EXPECT_NEAR(s.At(500), 1e-4, 1e-12);
  for (int64_t step = 10; step < 110; ++step) EXPECT_GT(s.At(step), s.At(step + 1));
}

TEST(LrScheduleTest, ConstantAfterWarmup) {
  const LrSchedule s{.peak_lr = 2e-3, .warmup_steps = 4, .total_steps = 50, .cosine = false};
  EXPECT_DOUBLE_EQ(s.At(0), 5e-4);
  EXPECT_DOUBLE_EQ(s.At(4), 2e-3);
  EXPECT_DOUBLE_EQ(s.At(49), 2e-3);
}

TEST(LrScheduleTest, NoWarmup) {
  const LrSchedule s{.peak_lr = 1.0, .warmup_steps = 0, .total_steps = 3, .min_lr_ratio = 0.0};
  EXPECT_DOUBLE_EQ(s.At(0), 1.0);
  EXPECT_NEAR(s.At(1), 0.5, 1e-15);
  EXPECT_DOUBLE_EQ(s.At(2), 0.0);
}

}  // namespace
}  // namespace gradsync::nn

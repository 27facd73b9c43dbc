#include "gradsync/train/loss_smoother.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace gradsync::worker {
namespace {

TEST(LossSmoother, StartsAtTheFirstLossAndIsAWeightedMeanOfAllSoFar) {
  train::LossSmoother smoother(0.9);
  EXPECT_EQ(smoother.value(), 0);
  const std::vector<double> losses = {4.0, 3.0, 3.5, 2.0, 2.5};
  for (size_t n = 0; n < losses.size(); ++n) {
    smoother.Add(losses[n]);
    // The mean of the losses so far, the one k steps back weighted 0.9^k.
    double weighted = 0, weights = 0;
    for (size_t i = 0; i <= n; ++i) {
      const double w = std::pow(0.9, static_cast<double>(n - i));
      weighted += w * losses[i];
      weights += w;
    }
    EXPECT_NEAR(smoother.value(), weighted / weights, 1e-12) << "after " << n + 1 << " losses";
  }
  EXPECT_DOUBLE_EQ(train::LossSmoother(0.9).value(), 0);
}

TEST(LossSmoother, AConstantLossStaysItself) {
  train::LossSmoother smoother(0.98);
  for (int i = 0; i < 500; ++i) smoother.Add(1.5);
  EXPECT_NEAR(smoother.value(), 1.5, 1e-12);
}

}  // namespace
}  // namespace gradsync::worker

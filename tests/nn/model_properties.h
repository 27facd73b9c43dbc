// Properties every Model must have, checked the same way for each architecture.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "gradsync/nn/model.h"
#include "gtest/gtest.h"

namespace gradsync::nn::testing {

inline std::vector<float> Grads(const Model& model) {
  return std::vector<float>(model.grads().begin(), model.grads().end());
}

// ForwardBackward returns the unscaled loss over `expected_count` examples or tokens (equal to
// Evaluate's), adds to the gradients (a second call doubles them) and takes the gradient of the
// scaled loss (scale 0.25 gives a quarter of it).
inline void ExpectGradientsAccumulateAndScale(Model& model, const Batch& batch, int64_t expected_count) {
  model.ZeroGrads();
  absl::StatusOr<LossSum> loss = model.ForwardBackward(batch, 1.0f, {});
  ASSERT_TRUE(loss.ok());
  EXPECT_EQ(loss->count, expected_count);
  EXPECT_DOUBLE_EQ(loss->sum, model.Evaluate(batch)->sum);
  const std::vector<float> once = Grads(model);

  ASSERT_TRUE(model.ForwardBackward(batch, 1.0f, {}).ok());
  for (size_t j = 0; j < once.size(); ++j) {
    EXPECT_NEAR(model.grads()[j], 2.0f * once[j], 1e-6f * (1.0f + std::abs(once[j])));
  }

  model.ZeroGrads();
  absl::StatusOr<LossSum> scaled = model.ForwardBackward(batch, 0.25f, {});
  EXPECT_DOUBLE_EQ(scaled->sum, loss->sum);
  for (size_t j = 0; j < once.size(); ++j) {
    EXPECT_NEAR(model.grads()[j], 0.25f * once[j], 1e-6f * (1.0f + std::abs(once[j])));
  }
}

}  // namespace gradsync::nn::testing

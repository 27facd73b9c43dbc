// The synthetic classification task: labels from a fixed random "teacher" network.
//
//   x_i    ~ N(0, 1)^D                       drawn from Rng(HashCombine(seed, i))
//   h      = tanh(W1 x_i)                    W1 [H, D] ~ N(0, 1/D)
//   label  = argmax_c (W2 h)[c]              W2 [C, H] ~ N(0, 1/H)
//
// The scales keep the teacher's pre-activations near N(0, 1), where tanh bends but does not
// saturate: the task is nonlinear, yet the default student learns it in a few hundred steps.
// There are no biases, since a random bias favours some classes and unbalances the labels.
//
// The teacher's weights come from the dataset seed alone, and each sample from (seed, index)
// alone, so any rank computes any sample without state or coordination. The teacher runs in
// double on the float features the student sees, so the label belongs to exactly those inputs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gradsync/data/dataset.h"
#include "gradsync/nn/model.h"

namespace gradsync::data {

struct SyntheticTeacherConfig {
  int64_t num_samples = 0;
  int64_t input_dim = 0;
  int64_t num_classes = 0;
  int64_t teacher_hidden = 0;
  uint64_t seed = 0;
};

class SyntheticTeacherDataset final : public Dataset {
 public:
  // All sizes must be positive (CreateDataset checks them).
  explicit SyntheticTeacherDataset(const SyntheticTeacherConfig& config);

  int64_t size() const override { return config_.num_samples; }
  // Thread-safe: reads only immutable state.
  absl::Status Fill(std::span<const int64_t> indices, nn::Batch* out) const override;

 private:
  // Writes sample `index`'s features to `x` (input_dim values) and returns its label. `hidden`
  // is scratch of teacher_hidden values.
  int32_t Sample(int64_t index, float* x, double* hidden) const;

  SyntheticTeacherConfig config_;
  std::vector<double> w1_, w2_;
};

}  // namespace gradsync::data

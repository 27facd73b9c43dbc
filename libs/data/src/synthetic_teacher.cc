#include "synthetic_teacher.h"

#include <algorithm>
#include <cmath>

#include "gradsync/core/rng.h"
#include "gradsync/data/dataset.h"
#include "gradsync/kernels/cpu/softmax_xent.h"

namespace gradsync::data {
namespace {

// The teacher's stream tag; sample streams use the sample index instead, and no index reaches
// 2^64 - 1, so the two never share a seed.
constexpr uint64_t kTeacherStream = ~uint64_t{0};

}  // namespace

SyntheticTeacherDataset::SyntheticTeacherDataset(const SyntheticTeacherConfig& config) : config_(config) {
  const int64_t d = config.input_dim;
  const int64_t h = config.teacher_hidden;
  const int64_t c = config.num_classes;
  Rng rng(HashCombine(config.seed, kTeacherStream));
  const double w1_std = 1.0 / std::sqrt(static_cast<double>(d));
  const double w2_std = 1.0 / std::sqrt(static_cast<double>(h));
  w1_.resize(h * d);
  for (double& w : w1_) w = w1_std * rng.Normal();
  w2_.resize(c * h);
  for (double& w : w2_) w = w2_std * rng.Normal();
}

int32_t SyntheticTeacherDataset::Sample(int64_t index, float* x, double* hidden) const {
  const int64_t d = config_.input_dim;
  const int64_t h = config_.teacher_hidden;
  const int64_t c = config_.num_classes;
  Rng rng(HashCombine(config_.seed, static_cast<uint64_t>(index)));
  for (int64_t j = 0; j < d; ++j) x[j] = static_cast<float>(rng.Normal());
  for (int64_t u = 0; u < h; ++u) {
    double z = 0.0;
    for (int64_t j = 0; j < d; ++j) z += w1_[u * d + j] * x[j];
    hidden[u] = std::tanh(z);
  }
  int32_t best = 0;
  double best_logit = 0.0;
  for (int64_t k = 0; k < c; ++k) {
    double z = 0.0;
    for (int64_t u = 0; u < h; ++u) z += w2_[k * h + u] * hidden[u];
    // Strict comparison: ties go to the lowest class, the same on every platform.
    if (k == 0 || z > best_logit) {
      best = static_cast<int32_t>(k);
      best_logit = z;
    }
  }
  return best;
}

absl::Status SyntheticTeacherDataset::Fill(std::span<const int64_t> indices, nn::Batch* out) const {
  const int64_t n = static_cast<int64_t>(indices.size());
  out->size = n;
  out->feature_dim = config_.input_dim;
  out->features.resize(n * config_.input_dim);
  out->targets.resize(n);
  out->tokens.clear();
  std::vector<double> hidden(config_.teacher_hidden);
  for (int64_t i = 0; i < n; ++i) {
    float* x = out->features.data() + i * config_.input_dim;
    if (indices[i] == kPadIndex) {
      std::fill(x, x + config_.input_dim, 0.0f);
      out->targets[i] = kernels::cpu::kIgnoreIndex;
      continue;
    }
    out->targets[i] = Sample(indices[i], x, hidden.data());
  }
  return absl::OkStatus();
}

}  // namespace gradsync::data

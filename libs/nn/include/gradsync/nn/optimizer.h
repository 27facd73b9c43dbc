// AdamW with decoupled weight decay, gradient clipping by global norm, and the learning-rate
// schedule (linear warmup, then cosine decay or constant).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "gradsync/kernels/adamw_hyper.h"
#include "gradsync/nn/param_layout.h"

namespace gradsync::nn {

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.0;

  // The kernels' hyperparameters (CPU and CUDA alike) for step `step`, counting from 1, at
  // learning rate `lr`; `decay` is left true for the caller to set per parameter.
  kernels::AdamWHyper Hyper(double lr, int64_t step) const {
    kernels::AdamWHyper hyper;
    hyper.lr = lr;
    hyper.beta1 = beta1;
    hyper.beta2 = beta2;
    hyper.eps = eps;
    hyper.weight_decay = weight_decay;
    hyper.step = step;
    return hyper;
  }
};

class AdamW {
 public:
  AdamW(const ParamLayout& layout, AdamWConfig config);
  // The optimizer of one shard, elements [begin, end) of the flat parameters (sharded data
  // parallel): its moments cover the shard alone, and Step updates it alone, element for element
  // as the whole optimizer would.
  AdamW(const ParamLayout& layout, AdamWConfig config, int64_t begin, int64_t end);

  // One update of `params` from `grads` (both the whole flat buffers) at learning rate `lr`,
  // within this optimizer's range. Deterministic.
  void Step(std::span<float> params, std::span<const float> grads, double lr);

  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }

  int64_t step_count() const { return t_; }
  std::span<const float> first_moment() const { return m_; }
  std::span<const float> second_moment() const { return v_; }

  // Restores the state a checkpoint saved, so the next Step continues exactly where the saved run
  // was. INVALID_ARGUMENT when the sizes do not match the layout.
  absl::Status Restore(std::span<const float> m, std::span<const float> v, int64_t step_count);

 private:
  const ParamLayout& layout_;
  AdamWConfig config_;
  int64_t begin_ = 0, end_ = 0;
  std::vector<float> m_, v_;
  int64_t t_ = 0;
};

// The L2 norm of `grads` (accumulated in double).
double GlobalNorm(std::span<const float> grads);

// Scales `grads` so its global norm is at most `max_norm` (no-op if max_norm <= 0).
// Returns the norm before clipping.
double ClipGlobalNorm(std::span<float> grads, double max_norm);

struct LrSchedule {
  double peak_lr = 1e-3;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  bool cosine = true;
  double min_lr_ratio = 0.1;

  // Learning rate for optimizer step `step` (0-based).
  double At(int64_t step) const;
};

}  // namespace gradsync::nn

#include "gradsync/nn/optimizer.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "gradsync/kernels/cpu/adamw.h"
#include "gradsync/kernels/cpu/global_norm.h"

namespace gradsync::nn {

AdamW::AdamW(const ParamLayout& layout, AdamWConfig config) : AdamW(layout, config, 0, layout.total_numel()) {}

AdamW::AdamW(const ParamLayout& layout, AdamWConfig config, int64_t begin, int64_t end)
    : layout_(layout),
      config_(config),
      begin_(begin),
      end_(end),
      m_(static_cast<size_t>(end - begin), 0.0f),
      v_(static_cast<size_t>(end - begin), 0.0f) {}

void AdamW::Step(std::span<float> params, std::span<const float> grads, double lr) {
  ++t_;
  kernels::AdamWHyper hyper = config_.Hyper(lr, t_);
  // One kernel call per parameter (its part within the range), because the decay flag is per
  // parameter. The update is elementwise, so a parameter split between shards updates exactly
  // as it would whole.
  for (const ParamInfo& p : layout_.params()) {
    const int64_t lo = std::max(p.offset, begin_), hi = std::min(p.offset + p.numel, end_);
    if (hi <= lo) continue;
    hyper.decay = p.weight_decay;
    kernels::cpu::AdamWUpdate(params.data() + lo, grads.data() + lo, m_.data() + (lo - begin_),
                              v_.data() + (lo - begin_), hi - lo, hyper);
  }
}

double GlobalNorm(std::span<const float> grads) {
  return std::sqrt(kernels::cpu::SumOfSquares(grads.data(), static_cast<int64_t>(grads.size())));
}

double ClipGlobalNorm(std::span<float> grads, double max_norm) {
  const double norm = GlobalNorm(grads);
  if (max_norm > 0.0 && norm > max_norm) {
    kernels::cpu::Scale(grads.data(), static_cast<int64_t>(grads.size()), static_cast<float>(max_norm / norm));
  }
  return norm;
}

double LrSchedule::At(int64_t step) const {
  if (step < warmup_steps) {
    return peak_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  }
  if (!cosine) return peak_lr;
  const double min_lr = min_lr_ratio * peak_lr;
  // Cosine from the peak at the first step after warmup to min_lr at the last step
  // (total_steps - 1); steps past the end stay at min_lr.
  const int64_t decay_steps = total_steps - 1 - warmup_steps;
  if (decay_steps <= 0) return step == warmup_steps ? peak_lr : min_lr;
  const double progress = std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps));
  return min_lr + 0.5 * (peak_lr - min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
}

absl::Status AdamW::Restore(std::span<const float> m, std::span<const float> v, int64_t step_count) {
  if (m.size() != m_.size() || v.size() != v_.size() || step_count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer state of ", m.size(), "/", v.size(), " elements does not fit a model of ", m_.size()));
  }
  std::copy(m.begin(), m.end(), m_.begin());
  std::copy(v.begin(), v.end(), v_.begin());
  t_ = step_count;
  return absl::OkStatus();
}

}  // namespace gradsync::nn

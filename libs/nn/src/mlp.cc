#include "mlp.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gradsync/core/rng.h"
#include "gradsync/kernels/cpu/gelu.h"
#include "gradsync/kernels/cpu/matmul.h"
#include "gradsync/kernels/cpu/relu.h"
#include "gradsync/kernels/cpu/softmax_xent.h"

namespace gradsync::nn {
namespace {

namespace k = gradsync::kernels::cpu;

std::string ParamCount(int64_t n) {
  if (n < 1000) return absl::StrCat(n, " params");
  if (n < 1000000) return absl::StrFormat("%.0fK params", n / 1e3);
  return absl::StrFormat("%.1fM params", n / 1e6);
}

// One unit per layer (its weight and bias); a training pass goes back through all of them.
std::vector<ParamUnit> LayerUnits(int layers) {
  std::vector<ParamUnit> units;
  for (int i = 0; i < layers; ++i) units.push_back({{2 * i, 2 * i + 2}});
  return units;
}

}  // namespace

Mlp::Mlp(Config config)
    : activation_(config.activation),
      orders_(LayerUnits(static_cast<int>(config.hidden_dims.size()) + 1), 0,
              static_cast<int>(config.hidden_dims.size()) + 1) {
  dims_.push_back(config.input_dim);
  dims_.insert(dims_.end(), config.hidden_dims.begin(), config.hidden_dims.end());
  dims_.push_back(config.num_classes);
  for (int i = 0; i < num_layers(); ++i) {
    mutable_layout().Add(absl::StrCat("layers.", i, ".weight"), {dims_[i + 1], dims_[i]},
                         /*weight_decay=*/true);
    mutable_layout().Add(absl::StrCat("layers.", i, ".bias"), {dims_[i + 1]},
                         /*weight_decay=*/false);
  }
  AllocateBuffers();
  pre_.resize(num_layers());
  post_.resize(num_layers());
  dpre_.resize(num_layers());
  dpost_.resize(num_layers());
}

void Mlp::InitParamRange(uint64_t seed, int first, int last) {
  for (int p = first; p < last; ++p) {
    std::span<float> values = layout().View(params(), p);
    if (p % 2 == 1) {  // a bias
      std::fill(values.begin(), values.end(), 0.0f);
      continue;
    }
    Rng rng(HashCombine(seed, static_cast<uint64_t>(p)));
    const double std = 1.0 / std::sqrt(static_cast<double>(dims_[p / 2]));
    for (float& x : values) x = static_cast<float>(std * rng.Normal());
  }
}

absl::Status Mlp::CheckBatch(const Batch& batch, bool need_targets) const {
  if (batch.size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("batch size is negative: ", batch.size));
  }
  if (batch.feature_dim != dims_.front()) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch feature_dim is ", batch.feature_dim, " but the model's input_dim is ", dims_.front()));
  }
  if (static_cast<int64_t>(batch.features.size()) != batch.size * batch.feature_dim) {
    return absl::InvalidArgumentError(absl::StrCat("batch holds ", batch.features.size(), " feature values, expected ",
                                                   batch.size, " x ", batch.feature_dim));
  }
  if (!need_targets) return absl::OkStatus();
  if (static_cast<int64_t>(batch.targets.size()) != batch.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch holds ", batch.targets.size(), " targets, expected ", batch.size));
  }
  for (int64_t i = 0; i < batch.size; ++i) {
    const int32_t t = batch.targets[i];
    if (t != k::kIgnoreIndex && (t < 0 || t >= dims_.back())) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch target ", i, " is ", t, ", outside [0, ", dims_.back(), ")"));
    }
  }
  return absl::OkStatus();
}

void Mlp::ActivationForward(float* out, const float* inp, int64_t n) const {
  if (activation_ == Activation::kGelu) {
    k::GeluForward(out, inp, n);
  } else {
    k::ReluForward(out, inp, n);
  }
}

void Mlp::ActivationBackward(float* dinp, const float* inp, const float* dout, int64_t n) const {
  if (activation_ == Activation::kGelu) {
    k::GeluBackward(dinp, inp, dout, n);
  } else {
    k::ReluBackward(dinp, inp, dout, n);
  }
}

absl::Status Mlp::Forward(const Batch& batch, GatedPass& pass) {
  const int64_t n = batch.size;
  const float* input = batch.features.data();
  for (int i = 0; i < num_layers(); ++i) {
    if (absl::Status s = pass.Next(); !s.ok()) return s;
    const float* w = layout().View(params(), 2 * i).data();
    const float* b = layout().View(params(), 2 * i + 1).data();
    pre_[i].resize(n * dims_[i + 1]);
    k::MatmulForward(pre_[i].data(), input, w, b, n, dims_[i], dims_[i + 1]);
    if (i + 1 == num_layers()) break;
    post_[i].resize(pre_[i].size());
    ActivationForward(post_[i].data(), pre_[i].data(), post_[i].size());
    input = post_[i].data();
  }
  return absl::OkStatus();
}

absl::StatusOr<LossSum> Mlp::ForwardBackward(const Batch& batch, float loss_scale, const GradsReadyFn& on_ready) {
  if (absl::Status s = CheckBatch(batch, /*need_targets=*/true); !s.ok()) return s;
  GatedPass pass(param_gate(), orders_.train());
  if (absl::Status s = Forward(batch, pass); !s.ok()) return s;
  const int64_t n = batch.size;
  const int last = num_layers() - 1;
  dpre_[last].resize(pre_[last].size());
  const k::XentSum xent =
      k::SoftmaxCrossEntropy(dpre_[last].data(), pre_[last].data(), batch.targets.data(), n, dims_.back(), loss_scale);
  for (int i = last; i >= 0; --i) {
    if (absl::Status s = pass.Next(); !s.ok()) return s;
    const float* input = i == 0 ? batch.features.data() : post_[i - 1].data();
    float* dinput = nullptr;
    if (i > 0) {
      // The kernels accumulate, and these buffers still hold the previous call's values.
      dpost_[i - 1].assign(post_[i - 1].size(), 0.0f);
      dinput = dpost_[i - 1].data();
    }
    k::MatmulBackward(dinput, layout().View(grads(), 2 * i).data(), layout().View(grads(), 2 * i + 1).data(),
                      dpre_[i].data(), input, layout().View(params(), 2 * i).data(), n, dims_[i], dims_[i + 1]);
    if (on_ready) on_ready(2 * i, 2 * i + 2);
    if (i > 0) {
      dpre_[i - 1].assign(pre_[i - 1].size(), 0.0f);
      ActivationBackward(dpre_[i - 1].data(), pre_[i - 1].data(), dpost_[i - 1].data(), dpre_[i - 1].size());
    }
  }
  return LossSum{xent.loss_sum, xent.count};
}

absl::StatusOr<LossSum> Mlp::Evaluate(const Batch& batch) {
  if (absl::Status s = CheckBatch(batch, /*need_targets=*/true); !s.ok()) return s;
  GatedPass pass(param_gate(), orders_.forward());
  if (absl::Status s = Forward(batch, pass); !s.ok()) return s;
  const k::XentSum xent =
      k::SoftmaxCrossEntropy<float>(nullptr, pre_.back().data(), batch.targets.data(), batch.size, dims_.back(), 1.0f);
  return LossSum{xent.loss_sum, xent.count};
}

absl::StatusOr<std::vector<float>> Mlp::Predict(const Batch& batch) {
  if (absl::Status s = CheckBatch(batch, /*need_targets=*/false); !s.ok()) return s;
  GatedPass pass(param_gate(), orders_.forward());
  if (absl::Status s = Forward(batch, pass); !s.ok()) return s;
  return pre_.back();
}

std::string Mlp::Describe() const {
  return absl::StrCat("mlp ", absl::StrJoin(dims_, "-"), " ", ActivationName(activation_), ", ",
                      ParamCount(layout().total_numel()));
}

}  // namespace gradsync::nn

// A multilayer perceptron classifier: Linear -> act -> ... -> Linear -> logits, trained with
// softmax cross-entropy. The "mlp" preset of CreateModel (its plan: model_plan.h).
//
// Parameters, in forward order: layers.{i}.weight [out, in] (decayed) and layers.{i}.bias [out]
// (not decayed), so layer i owns parameters 2i and 2i+1.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/nn/model.h"
#include "gradsync/nn/model_config.h"
#include "gradsync/nn/model_plan.h"
#include "gradsync/nn/param_gate.h"

namespace gradsync::nn {

class Mlp final : public Model {
 public:
  using Config = MlpConfig;

  // Registers the parameters (all zero until InitParams). Dimensions must be positive.
  explicit Mlp(Config config);

  // Weights ~ N(0, 1 / fan_in) (LeCun), biases 0. Each weight matrix draws from its own stream
  // seeded by (seed, parameter index), so one layer's size never shifts another's values.
  void InitParamRange(uint64_t seed, int first, int last) override;

  // `targets` may hold kIgnoreIndex (-1) for examples that count neither in the loss nor in the
  // gradient. Calls on_ready(2i, 2i + 2) for every layer i, last layer first, also for an empty
  // batch. Not thread-safe: activations live in member buffers reused across calls.
  absl::StatusOr<LossSum> ForwardBackward(const Batch& batch, float loss_scale, const GradsReadyFn& on_ready) override;
  absl::StatusOr<LossSum> Evaluate(const Batch& batch) override;
  absl::StatusOr<std::vector<float>> Predict(const Batch& batch) override;
  // E.g. "mlp 32-128-128-10 gelu, 22K params".
  std::string Describe() const override;
  // Units, for a gate: one per layer, forward in order and backward in reverse.
  bool supports_param_gate() const override { return true; }

 private:
  int num_layers() const { return static_cast<int>(dims_.size()) - 1; }
  absl::Status CheckBatch(const Batch& batch, bool need_targets) const;
  // Runs the layers on batch.features, leaving every layer's output in pre_/post_; the logits
  // are pre_.back(). The last layer stays held by `pass`.
  absl::Status Forward(const Batch& batch, GatedPass& pass);
  void ActivationForward(float* out, const float* inp, int64_t n) const;
  void ActivationBackward(float* dinp, const float* inp, const float* dout, int64_t n) const;

  std::vector<int64_t> dims_;  // input, hidden..., classes
  Activation activation_;
  // Per layer, batch x dims_[i + 1]: linear outputs (pre_), activation outputs of hidden layers
  // (post_), and their gradients. Resized per batch; capacity is kept across calls.
  std::vector<std::vector<float>> pre_, post_, dpre_, dpost_;
  // The gate's units and the orders a training and a forward-only pass use them in.
  PassOrders orders_;
};

}  // namespace gradsync::nn

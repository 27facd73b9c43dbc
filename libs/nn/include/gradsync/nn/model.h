// The model interface every network implements: flat parameter and gradient buffers with
// per-parameter views, and an explicit forward + backward per layer (no autograd engine).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/core/page_buffer.h"
#include "gradsync/nn/model_plan.h"
#include "gradsync/nn/param_gate.h"
#include "gradsync/nn/param_layout.h"

namespace gradsync::nn {

// One micro-batch. Classifiers use `features` (size x feature_dim, row-major) and `targets`
// (size). Language models use `tokens` and `targets` (size x seq_len each).
struct Batch {
  int64_t size = 0;
  int64_t feature_dim = 0;
  std::vector<float> features;
  std::vector<int32_t> tokens;
  std::vector<int32_t> targets;
};

// Sum of the per-example losses of a batch and how many examples (or tokens) they cover.
struct LossSum {
  double sum = 0.0;
  int64_t count = 0;
};

// Called during backward when the gradients of parameters [first, last) are final for this
// micro-step, in reverse layer order. Used to start gradient communication early.
using GradsReadyFn = std::function<void(int first_param, int last_param)>;

class Model {
 public:
  virtual ~Model() = default;

  const ParamLayout& layout() const { return layout_; }
  // The flat parameter and gradient buffers, laid out by layout(). Host memory unless
  // on_device() is true; then they are device memory (see gradsync/nn/cuda/cuda_model.h) and
  // must not be dereferenced on the host.
  std::span<float> params() { return params_view_; }
  std::span<const float> params() const { return params_view_; }
  std::span<float> grads() { return grads_view_; }
  std::span<const float> grads() const { return grads_view_; }

  // True when params() and grads() are GPU memory. The CPU models return false.
  virtual bool on_device() const { return false; }

  // Fills the parameters deterministically from `seed`.
  void InitParams(uint64_t seed) { InitParamRange(seed, 0, layout_.size()); }
  // Fills parameters [first, last) (layout indices) as InitParams would, leaving the others alone:
  // each parameter draws from its own stream, so a rank can initialise its parameters one at a
  // time and never hold the whole model.
  virtual void InitParamRange(uint64_t seed, int first, int last) = 0;

  // Sharded parameters (ddp.sharding "full"): from now on every pass brackets its use of each
  // layer's parameters with `gate` (null: none, params() is whole). Only where
  // supports_param_gate(); the gate must outlive its use.
  virtual bool supports_param_gate() const { return false; }
  void set_param_gate(ParamGate* gate) { gate_ = gate; }
  ParamGate* param_gate() const { return gate_; }

  // Elements [begin, end) of params() or grads() read as zero afterwards, and their whole pages
  // go back to the system (host models: gradsync/core/page_buffer.h) or their whole chunks to the
  // device (the GPU model's gradients: gradsync/kernels/cuda/device_pages.h); what a rank does
  // with the parts of the buffers outside its shard. No-ops on buffers a model cannot give back.
  // On a device model, no queued work may still touch the whole chunks inside the range.
  virtual void DiscardParams(int64_t begin, int64_t end);
  virtual void DiscardGrads(int64_t begin, int64_t end);
  // Makes elements [begin, end) of params() writable again after DiscardParams, before the caller
  // fills them (a gather): a device model maps their chunks back, zeroed; host pages come back by
  // themselves when touched, so host models need nothing. The device's error otherwise.
  virtual absl::Status CommitParams(int64_t /*begin*/, int64_t /*end*/) { return absl::OkStatus(); }
  // The bytes of params() and grads() resident in memory now (host pages, or device chunks
  // mapped); -1 where the model cannot tell.
  virtual int64_t ResidentParamBytes() const;
  virtual int64_t ResidentGradBytes() const;

  // Runs forward and backward on `batch`. The loss whose gradient is taken is
  // loss_scale * (sum of per-example losses); gradients are ADDED to grads() so that
  // micro-steps accumulate (the caller zeroes grads between optimizer steps). `on_ready` may be
  // empty. Returns the unscaled loss sum, or INVALID_ARGUMENT if the batch does not fit the model.
  virtual absl::StatusOr<LossSum> ForwardBackward(const Batch& batch, float loss_scale,
                                                  const GradsReadyFn& on_ready) = 0;

  // Forward only: the loss sum over `batch`.
  virtual absl::StatusOr<LossSum> Evaluate(const Batch& batch) = 0;

  // Forward only: logits (batch.size x num_outputs) for inference.
  virtual absl::StatusOr<std::vector<float>> Predict(const Batch& batch) = 0;

  // One line naming the architecture and its dimensions.
  virtual std::string Describe() const = 0;

  // Sets every gradient to zero (on a device model: queued on its stream).
  virtual void ZeroGrads();

 protected:
  // Subclasses register parameters in forward order, then call AllocateBuffers() once (host
  // buffers) or UseExternalBuffers() (buffers the subclass owns, e.g. device memory, each of
  // layout().total_numel() floats and alive as long as the model).
  ParamLayout& mutable_layout() { return layout_; }
  void AllocateBuffers();
  void UseExternalBuffers(std::span<float> params, std::span<float> grads);

 private:
  ParamLayout layout_;
  PageBuffer params_;
  PageBuffer grads_;
  ParamGate* gate_ = nullptr;
  std::span<float> params_view_;
  std::span<float> grads_view_;
};

// Whether CreateModel fills the parameters from the plan's seed (training.seed), or leaves them
// zero and untouched (no memory spent on them) for the caller to fill, e.g. one shard at a time.
enum class ModelInit { kFromSeed, kNone };

// Builds the model of a plan (libs/spec's PlanModel resolved and checked it, so this cannot fail).
std::unique_ptr<Model> CreateModel(const ModelPlan& plan, ModelInit init = ModelInit::kFromSeed);

// The elements of the plan's largest gate unit (what ddp.sharding "full" gathers at once: an MLP
// layer, a transformer block, or the embeddings), computed from the layout alone, no buffers.
int64_t LargestUnitNumel(const ModelPlan& plan);

}  // namespace gradsync::nn

// The optimizer step of a CudaModel on its device: gradient clipping by the global norm and
// AdamW, the GPU counterparts of GlobalNorm / ClipGlobalNorm / AdamW in gradsync/nn/optimizer.h.
//
// A step is, with no host synchronisation in between:
//
//   clip.Compute(grads, max_norm)      norm_sq = sum g^2, scale = min(1, max_norm / norm)  (device)
//   adamw.Step(params, grads, lr, clip.scale())   AdamW on g * scale, per parameter range
//   clip.ReadNorm()                    waits for the stream, returns the norm before clipping
//
// The clip factor stays on the device and is applied inside the AdamW update, so the gradients
// are read once and never rewritten (ClipGlobalNorm on the CPU scales them in place; the update
// is the same). Decoupled weight decay applies only to the parameters whose layout entry says so
// (matrices and embeddings, not norms and biases), as on the CPU. Both are deterministic: the
// norm is a fixed-order reduction and AdamW elementwise.
//
// params and grads are device spans on the stream's device (CudaModel::params()/grads()), which
// must be the calling thread's current device (every CudaModel call makes it so). One thread at
// a time per object; work is queued on the stream given at creation (not owned).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/nn/optimizer.h"
#include "gradsync/nn/param_layout.h"

namespace gradsync::nn::cuda {

class CudaGradClip {
 public:
  // INTERNAL or RESOURCE_EXHAUSTED if its few device floats cannot be allocated.
  static absl::StatusOr<std::unique_ptr<CudaGradClip>> Create(cudaStream_t stream);
  ~CudaGradClip();

  // Queues the global norm of grads and the clip factor (1 when max_norm <= 0 or the norm is at
  // most max_norm). INVALID_ARGUMENT from the kernels' checks.
  absl::Status Compute(std::span<const float> grads, double max_norm);

  // The two halves of Compute, for a norm whose gradients lie on several ranks (ddp.sharding
  // "gradients": each holds its shard's reduced gradients). ComputeSquared queues the sum of
  // squares of `grads` into the device float norm_sq(); the caller sums it across ranks in place
  // (an all-reduce ordered after the stream), then Finish queues the norm and clip factor of
  // norm_sq() as it then stands.
  absl::Status ComputeSquared(std::span<const float> grads);
  float* norm_sq() { return norm_sq_; }
  absl::Status Finish(double max_norm);

  // Device pointer to the clip factor of the last Compute, for CudaAdamW::Step.
  const float* scale() const { return scale_; }

  // Waits for the stream, then returns the norm before clipping of the last Compute. INTERNAL
  // for an error of any work queued on the stream.
  absl::StatusOr<double> ReadNorm();

  // Queues grads *= scale(): for a caller that wants clipped gradients themselves.
  absl::Status Apply(std::span<float> grads);

 private:
  CudaGradClip(cudaStream_t stream, float* device_floats);

  cudaStream_t stream_;
  float* device_floats_;  // [norm_sq, scale, norm, partials...]
  float* norm_sq_;
  float* scale_;
  float* norm_;
  float* partials_;
};

// AdamW over elements [begin, end) of the flat parameters (all of them by default; a rank's
// shard under ddp.sharding "optimizer", as nn::AdamW on the CPU): the moments cover that range
// alone and Step updates only it.
class CudaAdamW {
 public:
  // The moments start at zero. INTERNAL or RESOURCE_EXHAUSTED if they cannot be allocated;
  // INVALID_ARGUMENT for a range outside the layout. `layout` must outlive the optimizer.
  static absl::StatusOr<std::unique_ptr<CudaAdamW>> Create(const ParamLayout& layout, AdamWConfig config,
                                                           cudaStream_t stream, int64_t begin = 0, int64_t end = -1);
  ~CudaAdamW();

  // Queues one update of the range's params from grads * grad_scale[0] (a device float, e.g.
  // CudaGradClip::scale(); null means 1) at learning rate lr, one kernel per parameter the range
  // meets. The step counter advances on the host. INVALID_ARGUMENT when the spans (the whole
  // flat buffers) do not fit the layout.
  absl::Status Step(std::span<float> params, std::span<const float> grads, double lr, const float* grad_scale);

  int64_t step_count() const { return t_; }
  int64_t begin() const { return begin_; }
  int64_t end() const { return begin_ + n_; }
  // Device spans of the range's moments, for checkpoints.
  std::span<const float> first_moment() const { return {m_, static_cast<size_t>(n_)}; }
  std::span<const float> second_moment() const { return {v_, static_cast<size_t>(n_)}; }

  // Copies saved moments of the range (host memory) to the device and sets the step counter, so
  // that the next Step continues the saved run. INVALID_ARGUMENT when the sizes do not fit it.
  absl::Status Restore(std::span<const float> m, std::span<const float> v, int64_t step_count);

 private:
  CudaAdamW(const ParamLayout& layout, AdamWConfig config, cudaStream_t stream, int64_t begin, int64_t n,
            float* moments);

  const ParamLayout& layout_;
  AdamWConfig config_;
  cudaStream_t stream_;
  int64_t begin_;
  int64_t n_;
  float* m_;
  float* v_;
  int64_t t_ = 0;
};

}  // namespace gradsync::nn::cuda

// CudaGradClip and CudaAdamW: the optimizer step on the device, through global_norm.cuh and
// adamw.cuh; see gradsync/nn/cuda/cuda_optimizer.h.
#include "gradsync/nn/cuda/cuda_optimizer.h"

#include <cuda_bf16.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gradsync/kernels/cuda/adamw.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"
#include "gradsync/kernels/cuda/global_norm.cuh"

namespace gradsync::nn::cuda {
namespace {

namespace k = gradsync::kernels::cuda;

absl::StatusOr<float*> DeviceFloats(int64_t count, const char* what) {
  void* ptr = nullptr;
  const absl::Status status =
      k::CudaStatus(cudaMalloc(&ptr, count * sizeof(float)), absl::StrCat("cudaMalloc of ", what));
  if (!status.ok()) return status;
  return static_cast<float*>(ptr);
}

// Slots of CudaGradClip's device floats before the norm's partial sums.
constexpr int64_t kNormSqSlot = 0, kScaleSlot = 1, kNormSlot = 2, kPartialsSlot = 4;

}  // namespace

absl::StatusOr<std::unique_ptr<CudaGradClip>> CudaGradClip::Create(cudaStream_t stream) {
  absl::StatusOr<float*> floats = DeviceFloats(kPartialsSlot + k::kGlobalNormPartials, "the gradient norm's scratch");
  if (!floats.ok()) return floats.status();
  return std::unique_ptr<CudaGradClip>(new CudaGradClip(stream, *floats));
}

CudaGradClip::CudaGradClip(cudaStream_t stream, float* device_floats)
    : stream_(stream),
      device_floats_(device_floats),
      norm_sq_(device_floats + kNormSqSlot),
      scale_(device_floats + kScaleSlot),
      norm_(device_floats + kNormSlot),
      partials_(device_floats + kPartialsSlot) {}

CudaGradClip::~CudaGradClip() { cudaFree(device_floats_); }

absl::Status CudaGradClip::Compute(std::span<const float> grads, double max_norm) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(ComputeSquared(grads));
  return Finish(max_norm);
}

absl::Status CudaGradClip::ComputeSquared(std::span<const float> grads) {
  return k::GlobalNormSquared<float>(norm_sq_, grads.data(), static_cast<int64_t>(grads.size()),
                                     /*accumulate=*/false, partials_, stream_);
}

absl::Status CudaGradClip::Finish(double max_norm) { return k::ClipScale(scale_, norm_, norm_sq_, max_norm, stream_); }

absl::StatusOr<double> CudaGradClip::ReadNorm() {
  float norm = 0.0f;
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      k::CudaStatus(cudaMemcpyAsync(&norm, norm_, sizeof(float), cudaMemcpyDeviceToHost, stream_),
                    "cudaMemcpyAsync of the gradient norm"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize after the norm"));
  return static_cast<double>(norm);
}

absl::Status CudaGradClip::Apply(std::span<float> grads) {
  return k::ScaleGradients<float>(grads.data(), static_cast<int64_t>(grads.size()), scale_, stream_);
}

absl::StatusOr<std::unique_ptr<CudaAdamW>> CudaAdamW::Create(const ParamLayout& layout, AdamWConfig config,
                                                             cudaStream_t stream, int64_t begin, int64_t end) {
  if (end < 0) end = layout.total_numel();
  if (begin < 0 || begin > end || end > layout.total_numel()) {
    return absl::InvalidArgumentError(
        absl::StrCat("AdamW range [", begin, ", ", end, ") is not within the ", layout.total_numel(), " parameters"));
  }
  const int64_t n = end - begin;
  // At least one float each, so that an empty shard still has valid (unused) pointers.
  absl::StatusOr<float*> moments = DeviceFloats(2 * std::max<int64_t>(n, 1), "the AdamW moments");
  if (!moments.ok()) return moments.status();
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::CudaStatus(cudaMemsetAsync(*moments, 0, 2 * n * sizeof(float), stream),
                                              "cudaMemsetAsync of the AdamW moments"));
  return std::unique_ptr<CudaAdamW>(new CudaAdamW(layout, config, stream, begin, n, *moments));
}

CudaAdamW::CudaAdamW(const ParamLayout& layout, AdamWConfig config, cudaStream_t stream, int64_t begin, int64_t n,
                     float* moments)
    : layout_(layout), config_(config), stream_(stream), begin_(begin), n_(n), m_(moments), v_(moments + n) {}

CudaAdamW::~CudaAdamW() { cudaFree(m_); }

absl::Status CudaAdamW::Step(std::span<float> params, std::span<const float> grads, double lr,
                             const float* grad_scale) {
  const int64_t total = layout_.total_numel();
  if (static_cast<int64_t>(params.size()) != total || static_cast<int64_t>(grads.size()) != total) {
    return absl::InvalidArgumentError(
        absl::StrCat("AdamW step on ", params.size(), " params and ", grads.size(), " grads for a layout of ", total));
  }
  kernels::AdamWHyper hyper = config_.Hyper(lr, t_ + 1);
  // One launch per parameter the range meets, because the decay flag is per parameter (as on the
  // CPU); the moments are indexed from the range's start.
  for (const ParamInfo& p : layout_.params()) {
    const int64_t lo = std::max(p.offset, begin_), hi = std::min(p.offset + p.numel, end());
    if (lo >= hi) continue;
    hyper.decay = p.weight_decay;
    GRADSYNC_CUDA_RETURN_IF_ERROR(k::AdamWUpdate<float>(params.data() + lo, /*model=*/nullptr, grads.data() + lo,
                                                        m_ + (lo - begin_), v_ + (lo - begin_), hi - lo, hyper,
                                                        grad_scale, stream_));
  }
  ++t_;
  return absl::OkStatus();
}

absl::Status CudaAdamW::Restore(std::span<const float> m, std::span<const float> v, int64_t step_count) {
  if (static_cast<int64_t>(m.size()) != n_ || static_cast<int64_t>(v.size()) != n_ || step_count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer state of ", m.size(), "/", v.size(), " elements does not fit a model of ", n_));
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      k::CudaStatus(cudaMemcpyAsync(m_, m.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream_),
                    "cudaMemcpyAsync of the first moment"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      k::CudaStatus(cudaMemcpyAsync(v_, v.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream_),
                    "cudaMemcpyAsync of the second moment"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize after Restore"));
  t_ = step_count;
  return absl::OkStatus();
}

}  // namespace gradsync::nn::cuda

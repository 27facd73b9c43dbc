// Global norm, clip factor and gradient scaling (math in global_norm.cuh).
#include "gradsync/kernels/cuda/global_norm.cuh"

#include <algorithm>

#include "common.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::CeilDiv;
using internal::FromFloat;
using internal::ToFloat;

constexpr int kThreads = 256;
constexpr int kFinishThreads = 1024;
static_assert(kGlobalNormPartials <= kFinishThreads, "pass 2 reads one partial per thread");
// Below this many elements per block a block is mostly launch overhead.
constexpr int64_t kMinElementsPerBlock = 4 * kThreads;

template <typename T>
__global__ void __launch_bounds__(kThreads) NormPartialKernel(float* partials, const T* grads, int64_t n) {
  float sum = 0.0f;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const float g = ToFloat(grads[i]);
    sum += g * g;
  }
  __shared__ float scratch[kThreads / internal::kWarpSize];
  sum = internal::BlockSum<kThreads>(sum, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

__global__ void __launch_bounds__(kFinishThreads)
    NormFinishKernel(float* norm_sq, const float* partials, int blocks, bool accumulate) {
  float v = static_cast<int>(threadIdx.x) < blocks ? partials[threadIdx.x] : 0.0f;
  __shared__ float scratch[kFinishThreads / internal::kWarpSize];
  v = internal::BlockSum<kFinishThreads>(v, scratch);
  if (threadIdx.x == 0) *norm_sq = accumulate ? *norm_sq + v : v;
}

__global__ void ClipScaleKernel(float* scale, float* norm, const float* norm_sq, double max_norm) {
  const double total = sqrt(static_cast<double>(*norm_sq));
  *scale = (max_norm > 0.0 && total > max_norm) ? static_cast<float>(max_norm / total) : 1.0f;
  if (norm != nullptr) *norm = static_cast<float>(total);
}

template <typename T>
__global__ void ScaleKernel(T* grads, int64_t n, const float* scale) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  grads[i] = FromFloat<T>(ToFloat(grads[i]) * *scale);
}

}  // namespace

template <typename T>
absl::Status GlobalNormSquared(float* norm_sq, const T* grads, int64_t n, bool accumulate, float* scratch,
                               cudaStream_t stream) {
  constexpr const char* kFn = "GlobalNormSquared";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(kFn, "n", n));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "norm_sq", norm_sq));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "scratch", scratch));
  if (n > 0) GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "grads", grads));
  // A function of n only: the same n always reduces in the same order, on any GPU.
  const int blocks = static_cast<int>(std::clamp<int64_t>(CeilDiv(n, kMinElementsPerBlock), 1, kGlobalNormPartials));
  internal::LaunchKernel(NormPartialKernel<T>, blocks, kThreads, 0, stream, scratch, grads, n);
  GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("NormPartialKernel"));
  internal::LaunchKernel(NormFinishKernel, 1, kFinishThreads, 0, stream, norm_sq, scratch, blocks, accumulate);
  return LaunchStatus("NormFinishKernel");
}

absl::Status ClipScale(float* scale, float* norm, const float* norm_sq, double max_norm, cudaStream_t stream) {
  constexpr const char* kFn = "ClipScale";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "scale", scale));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "norm_sq", norm_sq));
  internal::LaunchKernel(ClipScaleKernel, 1, 1, 0, stream, scale, norm, norm_sq, max_norm);
  return LaunchStatus("ClipScaleKernel");
}

template <typename T>
absl::Status ScaleGradients(T* grads, int64_t n, const float* scale, cudaStream_t stream) {
  constexpr const char* kFn = "ScaleGradients";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(kFn, "n", n));
  if (n == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "grads", grads));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "scale", scale));
  internal::LaunchKernel(ScaleKernel<T>, static_cast<unsigned>(CeilDiv(n, kThreads)), kThreads, 0, stream, grads, n,
                         scale);
  return LaunchStatus("ScaleKernel");
}

template absl::Status GlobalNormSquared<float>(float*, const float*, int64_t, bool, float*, cudaStream_t);
template absl::Status GlobalNormSquared<bf16>(float*, const bf16*, int64_t, bool, float*, cudaStream_t);
template absl::Status ScaleGradients<float>(float*, int64_t, const float*, cudaStream_t);
template absl::Status ScaleGradients<bf16>(bf16*, int64_t, const float*, cudaStream_t);

}  // namespace gradsync::kernels::cuda

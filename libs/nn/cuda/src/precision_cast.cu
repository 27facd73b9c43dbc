#include "precision_cast.cuh"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::nn::cuda {
namespace {

using kernels::cuda::LaunchStatus;

constexpr int kThreads = 256;
// Enough blocks to fill an H100 several times over; the grid-stride loop covers the rest.
constexpr int64_t kMaxBlocks = 4096;

__global__ void CastToBf16Kernel(__nv_bfloat16* out, const float* in, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = __float2bfloat16_rn(in[i]);
  }
}

__global__ void FlushBf16GradsKernel(float* dst, __nv_bfloat16* src, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] += __bfloat162float(src[i]);
    src[i] = __float2bfloat16_rn(0.0f);
  }
}

unsigned Blocks(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

absl::Status Check(const char* what, const void* a, const void* b, int64_t n) {
  if (n < 0) return absl::InvalidArgumentError(absl::StrCat(what, ": n is negative: ", n));
  if (n > 0 && (a == nullptr || b == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": null buffer for ", n, " values"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CastToBf16(__nv_bfloat16* out, const float* in, int64_t n, cudaStream_t stream) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(Check("CastToBf16", out, in, n));
  if (n == 0) return absl::OkStatus();
  CastToBf16Kernel<<<Blocks(n), kThreads, 0, stream>>>(out, in, n);
  return LaunchStatus("CastToBf16Kernel");
}

absl::Status FlushBf16Grads(float* dst, __nv_bfloat16* src, int64_t n, cudaStream_t stream) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(Check("FlushBf16Grads", dst, src, n));
  if (n == 0) return absl::OkStatus();
  FlushBf16GradsKernel<<<Blocks(n), kThreads, 0, stream>>>(dst, src, n);
  return LaunchStatus("FlushBf16GradsKernel");
}

}  // namespace gradsync::nn::cuda

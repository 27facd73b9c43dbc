#include "bf16_cast.h"

namespace gradsync::comm {
namespace {

constexpr int kThreads = 256;

// Grid-stride loops: any n with a bounded grid.
__global__ void ToBf16(const float* __restrict__ in, __nv_bfloat16* __restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = __float2bfloat16_rn(in[i]);
  }
}

__global__ void FromBf16(const __nv_bfloat16* __restrict__ in, float* __restrict__ out, int64_t n, float scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = __bfloat162float(in[i]) * scale;
  }
}

unsigned Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

}  // namespace

cudaError_t CastToBf16(const float* in, __nv_bfloat16* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ToBf16<<<Blocks(n), kThreads, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t CastFromBf16(const __nv_bfloat16* in, float* out, int64_t n, float scale, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  FromBf16<<<Blocks(n), kThreads, 0, stream>>>(in, out, n, scale);
  return cudaGetLastError();
}

}  // namespace gradsync::comm

// Tiling, shape checks and shared-memory helpers of the attention kernels (attention.cuh).
// Private to kernels/cuda.
#pragma once

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common.cuh"
#include "gradsync/kernels/cuda/attention.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda::internal {

inline constexpr int kAttnWarps = 8;
inline constexpr int kAttnThreads = kAttnWarps * kWarpSize;
inline constexpr int kAttnRowsPerWarp = 8;
// Rows a block owns: queries (forward, dQ) or keys (dK/dV).
inline constexpr int kAttnBlockRows = kAttnWarps * kAttnRowsPerWarp;
// Rows of a streamed tile, one per lane: keys (forward, dQ) or queries (dK/dV).
inline constexpr int kAttnTile = kWarpSize;
inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;

// Sizes in the kernels' index type.
struct AttnDims {
  int64_t seq_len;
  int heads;
  int kv_heads;
  int64_t qkv_row;  // (H + 2 KVH) D
  int64_t out_row;  // H D
};

inline AttnDims DimsOf(const AttentionShape& s) {
  return {s.seq_len, static_cast<int>(s.heads), static_cast<int>(s.kv_heads), s.qkv_width(), s.out_width()};
}

// Copies rows [r0, r0 + rows) of one head (rows `src_row` elements apart) into shared memory as
// fp32, `stride` floats per row; rows at or past seq_len become zeros, so masked products stay
// finite (0 * garbage could be NaN).
template <int D, typename T>
__device__ __forceinline__ void LoadTile(float* dst, int stride, const T* src, int64_t src_row, int64_t r0, int rows,
                                         int64_t seq_len) {
  for (int e = threadIdx.x; e < rows * D; e += kAttnThreads) {
    const int r = e / D, d = e % D;
    const int64_t t = r0 + r;
    dst[r * stride + d] = t < seq_len ? ToFloat(src[t * src_row + d]) : 0.0f;
  }
}

// a . b over D floats of shared memory, with four partial sums to shorten the dependency chain
// (combined in a fixed order).
template <int D>
__device__ __forceinline__ float Dot(const float* a, const float* b) {
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
#pragma unroll 8
  for (int d = 0; d < D; d += 4) {
    s0 += a[d] * b[d];
    s1 += a[d + 1] * b[d + 1];
    s2 += a[d + 2] * b[d + 2];
    s3 += a[d + 3] * b[d + 3];
  }
  return (s0 + s1) + (s2 + s3);
}

inline absl::Status CheckAttention(const char* fn, const AttentionShape& s) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(NonNegative(fn, "shape.batch", s.batch));
  GRADSYNC_CUDA_RETURN_IF_ERROR(NonNegative(fn, "shape.seq_len", s.seq_len));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Positive(fn, "shape.heads", s.heads));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Positive(fn, "shape.kv_heads", s.kv_heads));
  if (s.heads % s.kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(fn, ": shape.kv_heads ", s.kv_heads, " does not divide shape.heads ", s.heads));
  }
  if (s.head_dim != 32 && s.head_dim != 64 && s.head_dim != 128) {
    return absl::InvalidArgumentError(absl::StrCat(fn, ": shape.head_dim must be 32, 64 or 128, got ", s.head_dim));
  }
  // Grid limits: heads (or kv heads) in y, batch in z.
  constexpr int64_t kMaxGridYz = 65535;
  if (s.heads > kMaxGridYz || s.batch > kMaxGridYz) {
    return absl::InvalidArgumentError(
        absl::StrCat(fn, ": shape.heads ", s.heads, " and shape.batch ", s.batch, " must be at most ", kMaxGridYz));
  }
  return absl::OkStatus();
}

// Lets `kernel` use `bytes` of dynamic shared memory (above 48 KiB needs the opt-in).
template <typename Kernel>
absl::Status AllowSharedMemory(Kernel kernel, size_t bytes, const char* name) {
  return CudaStatus(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
                    absl::StrCat("cudaFuncSetAttribute(", name, ", ", bytes, " bytes)"));
}

}  // namespace gradsync::kernels::cuda::internal

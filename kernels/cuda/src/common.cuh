// Device helpers shared by the kernels of this library: element conversion, 16-byte packs,
// warp and block reductions, and the argument checks of the launchers. Private to kernels/cuda.
//
// Every reduction here combines values in an order fixed by the launch shape alone (butterfly
// shuffles, then warp partials summed by one warp in index order), never by timing: results are
// bitwise reproducible from run to run on one GPU model.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#ifdef GRADSYNC_WARP_EMULATION
// tests/kernels_emulated runs these kernels on the host: launches and shared memory go there.
#include "warp_emulation.h"
#endif

namespace gradsync::kernels::cuda::internal {

using bf16 = __nv_bfloat16;

inline constexpr unsigned kFullMask = 0xffffffffu;
inline constexpr int kWarpSize = 32;

constexpr int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// fp32 is the arithmetic type of every kernel; T is the storage type.
__device__ __forceinline__ float ToFloat(float x) { return x; }
__device__ __forceinline__ float ToFloat(bf16 x) { return __bfloat162float(x); }
template <typename T>
__device__ __forceinline__ T FromFloat(float x);
template <>
__device__ __forceinline__ float FromFloat<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bf16 FromFloat<bf16>(float x) {
  return __float2bfloat16_rn(x);
}

// N elements moved as one 16-byte (or narrower) access.
template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};
// Elements per 16-byte access.
template <typename T>
inline constexpr int kPackWidth = 16 / static_cast<int>(sizeof(T));

// True when every pointer is 16-byte aligned, so the packed kernels may be used.
template <typename... Ptrs>
bool Aligned16(const Ptrs*... ptrs) {
  return ((reinterpret_cast<uintptr_t>(ptrs) % 16 == 0) && ...);
}

// Sum and max over the 32 lanes of a warp; every lane gets the result.
__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}
__device__ __forceinline__ double WarpSum(double v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}
__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// Sum over a block of kThreads (a multiple of 32, at most 1024); every thread gets the result.
// `scratch` is shared memory of kThreads / 32 elements; the call begins and ends with a barrier,
// so scratch can be reused by consecutive calls.
template <int kThreads, typename V>
__device__ __forceinline__ V BlockSum(V v, V* scratch) {
  static_assert(kThreads % kWarpSize == 0 && kThreads <= 1024);
  constexpr int kWarps = kThreads / kWarpSize;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  v = WarpSum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < kWarps ? scratch[lane] : V{0};
  v = WarpSum(v);
  __syncthreads();
  return v;
}

// kernel<<<grid, block, smem_bytes, stream>>>(args...): every launcher launches through this, so
// that the host emulation of tests/kernels_emulated (GRADSYNC_WARP_EMULATION) runs the same
// launchers, grid and block shapes included, with the block's threads as fibers.
template <typename... Params, typename... Args>
void LaunchKernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes, cudaStream_t stream,
                  Args&&... args) {
#ifdef GRADSYNC_WARP_EMULATION
  (void)stream;
  emulation::LaunchChecked(reinterpret_cast<const void*>(kernel), grid, block, smem_bytes, [&] { kernel(args...); });
#else
  // clang-format off
  kernel<<<grid, block, smem_bytes, stream>>>(std::forward<Args>(args)...);
  // clang-format on
#endif
}

// The block's dynamic shared memory (16-byte aligned), as T.
template <typename T>
__device__ __forceinline__ T* DynamicShared() {
#ifdef GRADSYNC_WARP_EMULATION
  return reinterpret_cast<T*>(emulation::BlockSharedMemory());
#else
  extern __shared__ __align__(16) unsigned char gradsync_dynamic_smem[];
  return reinterpret_cast<T*>(gradsync_dynamic_smem);
#endif
}

// exp with its argument clamped to [-87, 87], as the CPU reference does: the result is a normal
// float, so sigmoid(x) = 1 / (1 + exp(-x)) and e * s never meet inf * 0.
__device__ __forceinline__ float ClampedExp(float x) { return expf(fminf(fmaxf(x, -87.0f), 87.0f)); }

// ---- launcher argument checks (host) ----

inline absl::Status NonNegative(const char* fn, const char* arg, int64_t value) {
  if (value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(fn, ": ", arg, " must be >= 0, got ", value));
}

inline absl::Status Positive(const char* fn, const char* arg, int64_t value) {
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(fn, ": ", arg, " must be > 0, got ", value));
}

inline absl::Status NotNull(const char* fn, const char* arg, const void* ptr) {
  if (ptr != nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(fn, ": ", arg, " is null"));
}

}  // namespace gradsync::kernels::cuda::internal

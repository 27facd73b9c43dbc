// One kernel shape for the elementwise ops (GELU, residual): out[i] = op(in_0[i], ..., in_k[i]),
// or out[i] += op(...) when accumulating a gradient. Each thread moves one 16-byte pack per
// buffer when every pointer is 16-byte aligned (8 bf16 or 4 floats), else single elements; a
// ragged tail is done element by element by the last thread. fp32 arithmetic, one rounding into
// T. Deterministic (no reduction). Private to kernels/cuda.
#pragma once

#include <cstdint>

#include "common.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda::internal {

template <typename T, int kIn>
struct Inputs {
  const T* in[kIn];
};

// Op: __device__ float operator()(const float (&x)[kIn]) const.
template <typename T, int kVec, int kIn, bool kAccumulate, typename Op>
__global__ void MapKernel(T* out, Inputs<T, kIn> inputs, int64_t n, Op op) {
  const int64_t i0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (i0 >= n) return;
  if (i0 + kVec <= n) {
    Pack<T, kVec> in[kIn];
#pragma unroll
    for (int a = 0; a < kIn; ++a) in[a] = *reinterpret_cast<const Pack<T, kVec>*>(inputs.in[a] + i0);
    Pack<T, kVec> result;
    if constexpr (kAccumulate) result = *reinterpret_cast<const Pack<T, kVec>*>(out + i0);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      float x[kIn];
#pragma unroll
      for (int a = 0; a < kIn; ++a) x[a] = ToFloat(in[a].v[j]);
      float y = op(x);
      if constexpr (kAccumulate) y += ToFloat(result.v[j]);
      result.v[j] = FromFloat<T>(y);
    }
    *reinterpret_cast<Pack<T, kVec>*>(out + i0) = result;
    return;
  }
  for (int64_t i = i0; i < n; ++i) {
    float x[kIn];
#pragma unroll
    for (int a = 0; a < kIn; ++a) x[a] = ToFloat(inputs.in[a][i]);
    float y = op(x);
    if constexpr (kAccumulate) y += ToFloat(out[i]);
    out[i] = FromFloat<T>(y);
  }
}

template <typename T, int kVec, int kIn, bool kAccumulate, typename Op>
absl::Status LaunchMapWidth(const char* name, T* out, Inputs<T, kIn> inputs, int64_t n, Op op, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t threads = CeilDiv(n, kVec);
  internal::LaunchKernel(MapKernel<T, kVec, kIn, kAccumulate, Op>, static_cast<unsigned>(CeilDiv(threads, kThreads)),
                         kThreads, 0, stream, out, inputs, n, op);
  return LaunchStatus(name);
}

template <typename T, int kIn, bool kAccumulate, typename Op>
absl::Status LaunchMap(const char* name, T* out, Inputs<T, kIn> inputs, int64_t n, Op op, cudaStream_t stream) {
  if (n == 0) return absl::OkStatus();
  bool aligned = Aligned16(out);
  for (int a = 0; a < kIn; ++a) aligned = aligned && Aligned16(inputs.in[a]);
  if (aligned) {
    return LaunchMapWidth<T, kPackWidth<T>, kIn, kAccumulate>(name, out, inputs, n, op, stream);
  }
  return LaunchMapWidth<T, 1, kIn, kAccumulate>(name, out, inputs, n, op, stream);
}

}  // namespace gradsync::kernels::cuda::internal

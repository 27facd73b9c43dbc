// LayerNorm forward and backward (math in layernorm.cuh).
#include "gradsync/kernels/cuda/layernorm.cuh"

#include "column_reduce.cuh"
#include "common.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::CeilDiv;
using internal::FromFloat;
using internal::kWarpSize;
using internal::ToFloat;
using internal::WarpSum;

// A warp per row: a row of C elements is read by 32 lanes, coalesced. With kVec > 1 each lane
// moves 16-byte packs (C a multiple of kVec, buffers 16-byte aligned); kVec = 1 is the general
// layout. Either way the arithmetic is fp32, element by element, in the same order per lane.
constexpr int kRowsPerBlock = 8;
constexpr int kThreads = kRowsPerBlock * kWarpSize;

template <typename T, int kVec>
using Pack = internal::Pack<T, kVec>;

template <typename T, int kVec>
__device__ __forceinline__ Pack<T, kVec> Load(const T* row, int64_t q) {
  return reinterpret_cast<const Pack<T, kVec>*>(row)[q];
}

template <typename T, int kVec>
__global__ void __launch_bounds__(kThreads)
    LayerNormForwardKernel(T* out, float* mean, float* rstd, const T* inp, const T* weight, const T* bias, int64_t n,
                           int64_t c, float eps) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (row >= n) return;  // whole warps leave together: the shuffles below stay full
  const T* x = inp + row * c;
  const int64_t packs = c / kVec;
  const float inv_c = 1.0f / static_cast<float>(c);
  float sum = 0.0f;
  for (int64_t q = lane; q < packs; q += kWarpSize) {
    const Pack<T, kVec> xv = Load<T, kVec>(x, q);
#pragma unroll
    for (int e = 0; e < kVec; ++e) sum += ToFloat(xv.v[e]);
  }
  const float mu = WarpSum(sum) * inv_c;
  float sq = 0.0f;
  for (int64_t q = lane; q < packs; q += kWarpSize) {
    const Pack<T, kVec> xv = Load<T, kVec>(x, q);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const float d = ToFloat(xv.v[e]) - mu;
      sq += d * d;
    }
  }
  const float rs = 1.0f / sqrtf(WarpSum(sq) * inv_c + eps);
  T* y = out + row * c;
  for (int64_t q = lane; q < packs; q += kWarpSize) {
    const Pack<T, kVec> xv = Load<T, kVec>(x, q), wv = Load<T, kVec>(weight, q), bv = Load<T, kVec>(bias, q);
    Pack<T, kVec> yv;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      yv.v[e] = FromFloat<T>((ToFloat(xv.v[e]) - mu) * rs * ToFloat(wv.v[e]) + ToFloat(bv.v[e]));
    }
    reinterpret_cast<Pack<T, kVec>*>(y)[q] = yv;
  }
  if (lane == 0) {
    if (mean != nullptr) mean[row] = mu;
    if (rstd != nullptr) rstd[row] = rs;
  }
}

template <typename T, int kVec>
__global__ void __launch_bounds__(kThreads)
    LayerNormBackwardDinpKernel(T* dinp, const T* dout, const T* inp, const T* weight, const float* mean,
                                const float* rstd, int64_t n, int64_t c) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (row >= n) return;
  const T* x = inp + row * c;
  const T* dy = dout + row * c;
  const int64_t packs = c / kVec;
  const float mu = mean[row], rs = rstd[row];
  float sum_g = 0.0f, sum_g_xhat = 0.0f;
  for (int64_t q = lane; q < packs; q += kWarpSize) {
    const Pack<T, kVec> xv = Load<T, kVec>(x, q), dv = Load<T, kVec>(dy, q), wv = Load<T, kVec>(weight, q);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const float g = ToFloat(wv.v[e]) * ToFloat(dv.v[e]);
      sum_g += g;
      sum_g_xhat += g * ((ToFloat(xv.v[e]) - mu) * rs);
    }
  }
  const float inv_c = 1.0f / static_cast<float>(c);
  const float mean_g = WarpSum(sum_g) * inv_c;
  const float mean_g_xhat = WarpSum(sum_g_xhat) * inv_c;
  T* dx = dinp + row * c;
  for (int64_t q = lane; q < packs; q += kWarpSize) {
    const Pack<T, kVec> xv = Load<T, kVec>(x, q), dv = Load<T, kVec>(dy, q), wv = Load<T, kVec>(weight, q);
    Pack<T, kVec> out = Load<T, kVec>(dx, q);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const float xhat = (ToFloat(xv.v[e]) - mu) * rs;
      const float g = ToFloat(wv.v[e]) * ToFloat(dv.v[e]);
      out.v[e] = FromFloat<T>(ToFloat(out.v[e]) + rs * (g - mean_g - xhat * mean_g_xhat));
    }
    reinterpret_cast<Pack<T, kVec>*>(dx)[q] = out;
  }
}

// acc[0] += dy * xhat (dweight), acc[1] += dy (dbias).
template <typename T>
struct WeightBiasTerms {
  const T* dout;
  const T* inp;
  const float* mean;
  const float* rstd;
  int64_t c;
  __device__ void operator()(int64_t row, int64_t col, float (&acc)[2]) const {
    const float dy = ToFloat(dout[row * c + col]);
    acc[0] += dy * ((ToFloat(inp[row * c + col]) - mean[row]) * rstd[row]);
    acc[1] += dy;
  }
};

absl::Status CheckShape(const char* fn, int64_t n, int64_t c) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(fn, "n", n));
  return internal::Positive(fn, "c", c);
}

}  // namespace

template <typename T>
absl::Status LayerNormForward(T* out, float* mean, float* rstd, const T* inp, const T* weight, const T* bias, int64_t n,
                              int64_t c, float eps, cudaStream_t stream) {
  constexpr const char* kFn = "LayerNormForward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckShape(kFn, n, c));
  if (n == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "out", out));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "weight", weight));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "bias", bias));
  const unsigned blocks = static_cast<unsigned>(CeilDiv(n, kRowsPerBlock));
  if (c % internal::kPackWidth<T> == 0 && internal::Aligned16(out, inp, weight, bias)) {
    internal::LaunchKernel(LayerNormForwardKernel<T, internal::kPackWidth<T>>, blocks, kThreads, 0, stream, out, mean,
                           rstd, inp, weight, bias, n, c, eps);
  } else {
    internal::LaunchKernel(LayerNormForwardKernel<T, 1>, blocks, kThreads, 0, stream, out, mean, rstd, inp, weight,
                           bias, n, c, eps);
  }
  return LaunchStatus("LayerNormForwardKernel");
}

int64_t LayerNormBackwardScratchFloats(int64_t n, int64_t c) { return internal::ColumnReduceScratchFloats(n, c, 2); }

template <typename T>
absl::Status LayerNormBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                               const float* mean, const float* rstd, int64_t n, int64_t c, float* scratch,
                               int64_t scratch_floats, cudaStream_t stream) {
  constexpr const char* kFn = "LayerNormBackward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckShape(kFn, n, c));
  if (n == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dout", dout));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "mean", mean));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "rstd", rstd));
  if (dinp != nullptr) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "weight", weight));
    const unsigned blocks = static_cast<unsigned>(CeilDiv(n, kRowsPerBlock));
    if (c % internal::kPackWidth<T> == 0 && internal::Aligned16(dinp, dout, inp, weight)) {
      internal::LaunchKernel(LayerNormBackwardDinpKernel<T, internal::kPackWidth<T>>, blocks, kThreads, 0, stream, dinp,
                             dout, inp, weight, mean, rstd, n, c);
    } else {
      internal::LaunchKernel(LayerNormBackwardDinpKernel<T, 1>, blocks, kThreads, 0, stream, dinp, dout, inp, weight,
                             mean, rstd, n, c);
    }
    GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("LayerNormBackwardDinpKernel"));
  }
  if (dweight == nullptr && dbias == nullptr) return absl::OkStatus();
  return internal::LaunchColumnReduce<2, T>("LayerNormBackward dweight/dbias",
                                            WeightBiasTerms<T>{dout, inp, mean, rstd, c}, n, c, scratch, scratch_floats,
                                            internal::ColumnOutputs<T, 2>{{dweight, dbias}}, stream);
}

template absl::Status LayerNormForward<float>(float*, float*, float*, const float*, const float*, const float*, int64_t,
                                              int64_t, float, cudaStream_t);
template absl::Status LayerNormForward<bf16>(bf16*, float*, float*, const bf16*, const bf16*, const bf16*, int64_t,
                                             int64_t, float, cudaStream_t);
template absl::Status LayerNormBackward<float>(float*, float*, float*, const float*, const float*, const float*,
                                               const float*, const float*, int64_t, int64_t, float*, int64_t,
                                               cudaStream_t);
template absl::Status LayerNormBackward<bf16>(bf16*, bf16*, bf16*, const bf16*, const bf16*, const bf16*, const float*,
                                              const float*, int64_t, int64_t, float*, int64_t, cudaStream_t);

}  // namespace gradsync::kernels::cuda

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

// A warp per row: a row of C elements is read by 32 lanes, C/32 each, coalesced.
constexpr int kRowsPerBlock = 8;
constexpr int kThreads = kRowsPerBlock * kWarpSize;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    LayerNormForwardKernel(T* out, float* mean, float* rstd, const T* inp, const T* weight,
                           const T* bias, int64_t n, int64_t c, float eps) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (row >= n) return;  // whole warps leave together: the shuffles below stay full
  const T* x = inp + row * c;
  const float inv_c = 1.0f / static_cast<float>(c);
  float sum = 0.0f;
  for (int64_t i = lane; i < c; i += kWarpSize) sum += ToFloat(x[i]);
  const float mu = WarpSum(sum) * inv_c;
  float sq = 0.0f;
  for (int64_t i = lane; i < c; i += kWarpSize) {
    const float d = ToFloat(x[i]) - mu;
    sq += d * d;
  }
  const float rs = 1.0f / sqrtf(WarpSum(sq) * inv_c + eps);
  T* y = out + row * c;
  for (int64_t i = lane; i < c; i += kWarpSize) {
    y[i] = FromFloat<T>((ToFloat(x[i]) - mu) * rs * ToFloat(weight[i]) + ToFloat(bias[i]));
  }
  if (lane == 0) {
    if (mean != nullptr) mean[row] = mu;
    if (rstd != nullptr) rstd[row] = rs;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    LayerNormBackwardDinpKernel(T* dinp, const T* dout, const T* inp, const T* weight,
                                const float* mean, const float* rstd, int64_t n, int64_t c) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (row >= n) return;
  const T* x = inp + row * c;
  const T* dy = dout + row * c;
  const float mu = mean[row], rs = rstd[row];
  float sum_g = 0.0f, sum_g_xhat = 0.0f;
  for (int64_t i = lane; i < c; i += kWarpSize) {
    const float g = ToFloat(weight[i]) * ToFloat(dy[i]);
    sum_g += g;
    sum_g_xhat += g * ((ToFloat(x[i]) - mu) * rs);
  }
  const float inv_c = 1.0f / static_cast<float>(c);
  const float mean_g = WarpSum(sum_g) * inv_c;
  const float mean_g_xhat = WarpSum(sum_g_xhat) * inv_c;
  T* dx = dinp + row * c;
  for (int64_t i = lane; i < c; i += kWarpSize) {
    const float xhat = (ToFloat(x[i]) - mu) * rs;
    const float g = ToFloat(weight[i]) * ToFloat(dy[i]);
    dx[i] = FromFloat<T>(ToFloat(dx[i]) + rs * (g - mean_g - xhat * mean_g_xhat));
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
absl::Status LayerNormForward(T* out, float* mean, float* rstd, const T* inp, const T* weight,
                              const T* bias, int64_t n, int64_t c, float eps,
                              cudaStream_t stream) {
  constexpr const char* kFn = "LayerNormForward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckShape(kFn, n, c));
  if (n == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "out", out));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "weight", weight));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "bias", bias));
  LayerNormForwardKernel<<<static_cast<unsigned>(CeilDiv(n, kRowsPerBlock)), kThreads, 0,
                           stream>>>(out, mean, rstd, inp, weight, bias, n, c, eps);
  return LaunchStatus("LayerNormForwardKernel");
}

int64_t LayerNormBackwardScratchFloats(int64_t n, int64_t c) {
  return internal::ColumnReduceScratchFloats(n, c, 2);
}

template <typename T>
absl::Status LayerNormBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp,
                               const T* weight, const float* mean, const float* rstd, int64_t n,
                               int64_t c, float* scratch, int64_t scratch_floats,
                               cudaStream_t stream) {
  constexpr const char* kFn = "LayerNormBackward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckShape(kFn, n, c));
  if (n == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dout", dout));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "mean", mean));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "rstd", rstd));
  if (dinp != nullptr) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "weight", weight));
    LayerNormBackwardDinpKernel<<<static_cast<unsigned>(CeilDiv(n, kRowsPerBlock)), kThreads, 0,
                                  stream>>>(dinp, dout, inp, weight, mean, rstd, n, c);
    GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("LayerNormBackwardDinpKernel"));
  }
  if (dweight == nullptr && dbias == nullptr) return absl::OkStatus();
  return internal::LaunchColumnReduce<2, T>(
      "LayerNormBackward dweight/dbias", WeightBiasTerms<T>{dout, inp, mean, rstd, c}, n, c,
      scratch, scratch_floats, internal::ColumnOutputs<T, 2>{{dweight, dbias}}, stream);
}

template absl::Status LayerNormForward<float>(float*, float*, float*, const float*, const float*,
                                              const float*, int64_t, int64_t, float,
                                              cudaStream_t);
template absl::Status LayerNormForward<bf16>(bf16*, float*, float*, const bf16*, const bf16*,
                                             const bf16*, int64_t, int64_t, float, cudaStream_t);
template absl::Status LayerNormBackward<float>(float*, float*, float*, const float*, const float*,
                                               const float*, const float*, const float*, int64_t,
                                               int64_t, float*, int64_t, cudaStream_t);
template absl::Status LayerNormBackward<bf16>(bf16*, bf16*, bf16*, const bf16*, const bf16*,
                                              const bf16*, const float*, const float*, int64_t,
                                              int64_t, float*, int64_t, cudaStream_t);

}  // namespace gradsync::kernels::cuda

// RMSNorm forward and backward (math in rmsnorm.cuh).
#include "gradsync/kernels/cuda/rmsnorm.cuh"

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

constexpr int kRowsPerBlock = 8;  // a warp per row, as in layernorm.cu
constexpr int kThreads = kRowsPerBlock * kWarpSize;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    RmsNormForwardKernel(T* out, float* rstd, const T* inp, const T* weight, int64_t n, int64_t c, float eps) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (row >= n) return;
  const T* x = inp + row * c;
  float sq = 0.0f;
  for (int64_t i = lane; i < c; i += kWarpSize) {
    const float v = ToFloat(x[i]);
    sq += v * v;
  }
  const float rs = 1.0f / sqrtf(WarpSum(sq) / static_cast<float>(c) + eps);
  T* y = out + row * c;
  for (int64_t i = lane; i < c; i += kWarpSize) {
    y[i] = FromFloat<T>(ToFloat(x[i]) * rs * ToFloat(weight[i]));
  }
  if (lane == 0 && rstd != nullptr) rstd[row] = rs;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    RmsNormBackwardDinpKernel(T* dinp, const T* dout, const T* inp, const T* weight, const float* rstd, int64_t n,
                              int64_t c) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (row >= n) return;
  const T* x = inp + row * c;
  const T* dy = dout + row * c;
  const float rs = rstd[row];
  float sum_g_xhat = 0.0f;
  for (int64_t i = lane; i < c; i += kWarpSize) {
    sum_g_xhat += ToFloat(weight[i]) * ToFloat(dy[i]) * (ToFloat(x[i]) * rs);
  }
  const float mean_g_xhat = WarpSum(sum_g_xhat) / static_cast<float>(c);
  T* dx = dinp + row * c;
  for (int64_t i = lane; i < c; i += kWarpSize) {
    const float xhat = ToFloat(x[i]) * rs;
    const float g = ToFloat(weight[i]) * ToFloat(dy[i]);
    dx[i] = FromFloat<T>(ToFloat(dx[i]) + rs * (g - xhat * mean_g_xhat));
  }
}

// acc[0] += dy * xhat (dweight).
template <typename T>
struct WeightTerm {
  const T* dout;
  const T* inp;
  const float* rstd;
  int64_t c;
  __device__ void operator()(int64_t row, int64_t col, float (&acc)[1]) const {
    acc[0] += ToFloat(dout[row * c + col]) * (ToFloat(inp[row * c + col]) * rstd[row]);
  }
};

absl::Status CheckShape(const char* fn, int64_t n, int64_t c) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(fn, "n", n));
  return internal::Positive(fn, "c", c);
}

}  // namespace

template <typename T>
absl::Status RmsNormForward(T* out, float* rstd, const T* inp, const T* weight, int64_t n, int64_t c, float eps,
                            cudaStream_t stream) {
  constexpr const char* kFn = "RmsNormForward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckShape(kFn, n, c));
  if (n == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "out", out));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "weight", weight));
  internal::LaunchKernel(RmsNormForwardKernel<T>, static_cast<unsigned>(CeilDiv(n, kRowsPerBlock)), kThreads, 0, stream,
                         out, rstd, inp, weight, n, c, eps);
  return LaunchStatus("RmsNormForwardKernel");
}

int64_t RmsNormBackwardScratchFloats(int64_t n, int64_t c) { return internal::ColumnReduceScratchFloats(n, c, 1); }

template <typename T>
absl::Status RmsNormBackward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const float* rstd,
                             int64_t n, int64_t c, float* scratch, int64_t scratch_floats, cudaStream_t stream) {
  constexpr const char* kFn = "RmsNormBackward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckShape(kFn, n, c));
  if (n == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dout", dout));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "rstd", rstd));
  if (dinp != nullptr) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "weight", weight));
    internal::LaunchKernel(RmsNormBackwardDinpKernel<T>, static_cast<unsigned>(CeilDiv(n, kRowsPerBlock)), kThreads, 0,
                           stream, dinp, dout, inp, weight, rstd, n, c);
    GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("RmsNormBackwardDinpKernel"));
  }
  if (dweight == nullptr) return absl::OkStatus();
  return internal::LaunchColumnReduce<1, T>("RmsNormBackward dweight", WeightTerm<T>{dout, inp, rstd, c}, n, c, scratch,
                                            scratch_floats, internal::ColumnOutputs<T, 1>{{dweight}}, stream);
}

template absl::Status RmsNormForward<float>(float*, float*, const float*, const float*, int64_t, int64_t, float,
                                            cudaStream_t);
template absl::Status RmsNormForward<bf16>(bf16*, float*, const bf16*, const bf16*, int64_t, int64_t, float,
                                           cudaStream_t);
template absl::Status RmsNormBackward<float>(float*, float*, const float*, const float*, const float*, const float*,
                                             int64_t, int64_t, float*, int64_t, cudaStream_t);
template absl::Status RmsNormBackward<bf16>(bf16*, bf16*, const bf16*, const bf16*, const bf16*, const float*, int64_t,
                                            int64_t, float*, int64_t, cudaStream_t);

}  // namespace gradsync::kernels::cuda

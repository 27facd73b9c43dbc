// Rotary embedding tables and rotations (math in rope.cuh).
#include "gradsync/kernels/cuda/rope.cuh"

#include "absl/strings/str_cat.h"
#include "common.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::CeilDiv;
using internal::FromFloat;
using internal::ToFloat;

constexpr int kThreads = 256;

__global__ void RopeTablesKernel(float* cos_table, float* sin_table, int64_t seq_len, int64_t head_dim, double theta) {
  const int64_t half = head_dim / 2;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= seq_len * half) return;
  const int64_t t = idx / half, i = idx - t * half;
  const double freq = pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
  const double angle = static_cast<double>(t) * freq;
  cos_table[idx] = static_cast<float>(cos(angle));
  sin_table[idx] = static_cast<float>(sin(angle));
}

// One thread per (row, head, i < D/2); sign = +1 rotates forward, -1 backward (the transpose).
template <typename T>
__global__ void RopeRotateKernel(T* x, const float* cos_table, const float* sin_table, int64_t rows, int64_t seq_len,
                                 int64_t heads, int64_t head_dim, int64_t row_stride, float sign) {
  const int64_t half = head_dim / 2;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * heads * half) return;
  const int64_t i = idx % half;
  const int64_t h = (idx / half) % heads;
  const int64_t row = idx / (half * heads);
  const int64_t t = row % seq_len;
  T* v = x + row * row_stride + h * head_dim;
  const float c = cos_table[t * half + i], s = sign * sin_table[t * half + i];
  const float a = ToFloat(v[i]), b = ToFloat(v[i + half]);
  v[i] = FromFloat<T>(a * c - b * s);
  v[i + half] = FromFloat<T>(b * c + a * s);
}

absl::Status CheckRotate(const char* fn, const void* x, const float* cos_table, const float* sin_table, int64_t batch,
                         int64_t seq_len, int64_t heads, int64_t head_dim, int64_t row_stride) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(fn, "batch", batch));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(fn, "seq_len", seq_len));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(fn, "heads", heads));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::Positive(fn, "head_dim", head_dim));
  if (head_dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(fn, ": head_dim must be even, got ", head_dim));
  }
  if (row_stride < heads * head_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat(fn, ": row_stride ", row_stride, " is shorter than heads * head_dim = ", heads * head_dim));
  }
  if (batch == 0 || seq_len == 0 || heads == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(fn, "x", x));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(fn, "cos", cos_table));
  return internal::NotNull(fn, "sin", sin_table);
}

template <typename T>
absl::Status Rotate(const char* fn, T* x, const float* cos_table, const float* sin_table, int64_t batch,
                    int64_t seq_len, int64_t heads, int64_t head_dim, int64_t row_stride, float sign,
                    cudaStream_t stream) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckRotate(fn, x, cos_table, sin_table, batch, seq_len, heads, head_dim, row_stride));
  const int64_t total = batch * seq_len * heads * (head_dim / 2);
  if (total == 0) return absl::OkStatus();
  internal::LaunchKernel(RopeRotateKernel<T>, static_cast<unsigned>(CeilDiv(total, kThreads)), kThreads, 0, stream, x,
                         cos_table, sin_table, batch * seq_len, seq_len, heads, head_dim, row_stride, sign);
  return LaunchStatus("RopeRotateKernel");
}

}  // namespace

absl::Status RopeTables(float* cos_table, float* sin_table, int64_t seq_len, int64_t head_dim, double theta,
                        cudaStream_t stream) {
  constexpr const char* kFn = "RopeTables";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(kFn, "seq_len", seq_len));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::Positive(kFn, "head_dim", head_dim));
  if (head_dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(kFn, ": head_dim must be even, got ", head_dim));
  }
  if (!(theta > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(kFn, ": theta must be > 0, got ", theta));
  }
  const int64_t total = seq_len * (head_dim / 2);
  if (total == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "cos", cos_table));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "sin", sin_table));
  internal::LaunchKernel(RopeTablesKernel, static_cast<unsigned>(CeilDiv(total, kThreads)), kThreads, 0, stream,
                         cos_table, sin_table, seq_len, head_dim, theta);
  return LaunchStatus("RopeTablesKernel");
}

template <typename T>
absl::Status RopeForward(T* x, const float* cos, const float* sin, int64_t batch, int64_t seq_len, int64_t heads,
                         int64_t head_dim, int64_t row_stride, cudaStream_t stream) {
  return Rotate("RopeForward", x, cos, sin, batch, seq_len, heads, head_dim, row_stride, 1.0f, stream);
}

template <typename T>
absl::Status RopeBackward(T* dx, const float* cos, const float* sin, int64_t batch, int64_t seq_len, int64_t heads,
                          int64_t head_dim, int64_t row_stride, cudaStream_t stream) {
  return Rotate("RopeBackward", dx, cos, sin, batch, seq_len, heads, head_dim, row_stride, -1.0f, stream);
}

template absl::Status RopeForward<float>(float*, const float*, const float*, int64_t, int64_t, int64_t, int64_t,
                                         int64_t, cudaStream_t);
template absl::Status RopeForward<bf16>(bf16*, const float*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                                        cudaStream_t);
template absl::Status RopeBackward<float>(float*, const float*, const float*, int64_t, int64_t, int64_t, int64_t,
                                          int64_t, cudaStream_t);
template absl::Status RopeBackward<bf16>(bf16*, const float*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                                         cudaStream_t);

}  // namespace gradsync::kernels::cuda

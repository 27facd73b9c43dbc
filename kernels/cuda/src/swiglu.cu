// SwiGLU forward and backward (math in swiglu.cuh). A thread takes kVec consecutive columns of one
// row; kVec > 1 only when M is a multiple of it, so a pack never straddles the gate/up boundary.
#include "gradsync/kernels/cuda/swiglu.cuh"

#include "common.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::CeilDiv;
using internal::ClampedExp;
using internal::FromFloat;
using internal::Pack;
using internal::ToFloat;

constexpr int kThreads = 256;

template <typename T, int kVec>
__global__ void SwiGluForwardKernel(T* out, const T* inp, int64_t n, int64_t m) {
  const int64_t idx = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (idx >= n * m) return;
  const int64_t row = idx / m, col = idx - row * m;
  const T* g = inp + row * 2 * m + col;
  const T* u = g + m;
  const Pack<T, kVec> gp = *reinterpret_cast<const Pack<T, kVec>*>(g);
  const Pack<T, kVec> up = *reinterpret_cast<const Pack<T, kVec>*>(u);
  Pack<T, kVec> y;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const float gv = ToFloat(gp.v[j]);
    y.v[j] = FromFloat<T>(gv * (1.0f / (1.0f + ClampedExp(-gv))) * ToFloat(up.v[j]));
  }
  *reinterpret_cast<Pack<T, kVec>*>(out + idx) = y;
}

template <typename T, int kVec, bool kAccumulate>
__global__ void SwiGluBackwardKernel(T* dinp, const T* inp, const T* dout, int64_t n, int64_t m) {
  const int64_t idx = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (idx >= n * m) return;
  const int64_t row = idx / m, col = idx - row * m;
  const int64_t g_off = row * 2 * m + col, u_off = g_off + m;
  const Pack<T, kVec> gp = *reinterpret_cast<const Pack<T, kVec>*>(inp + g_off);
  const Pack<T, kVec> up = *reinterpret_cast<const Pack<T, kVec>*>(inp + u_off);
  const Pack<T, kVec> dyp = *reinterpret_cast<const Pack<T, kVec>*>(dout + idx);
  Pack<T, kVec> dg, du;
  if constexpr (kAccumulate) {
    dg = *reinterpret_cast<const Pack<T, kVec>*>(dinp + g_off);
    du = *reinterpret_cast<const Pack<T, kVec>*>(dinp + u_off);
  }
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const float g = ToFloat(gp.v[j]), u = ToFloat(up.v[j]), dy = ToFloat(dyp.v[j]);
    const float e = ClampedExp(-g);
    const float s = 1.0f / (1.0f + e);
    const float one_minus_s = e * s;
    float dg_new = dy * u * s * (1.0f + g * one_minus_s), du_new = dy * g * s;
    if constexpr (kAccumulate) {
      dg_new += ToFloat(dg.v[j]);
      du_new += ToFloat(du.v[j]);
    }
    dg.v[j] = FromFloat<T>(dg_new);
    du.v[j] = FromFloat<T>(du_new);
  }
  *reinterpret_cast<Pack<T, kVec>*>(dinp + g_off) = dg;
  *reinterpret_cast<Pack<T, kVec>*>(dinp + u_off) = du;
}

absl::Status CheckShape(const char* fn, int64_t n, int64_t m) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(fn, "n", n));
  return internal::NonNegative(fn, "m", m);
}

// Packs need M to be a multiple of the pack (rows then start on pack boundaries) and aligned bases.
template <typename T, typename... Ptrs>
bool CanPack(int64_t m, const Ptrs*... ptrs) {
  return m % internal::kPackWidth<T> == 0 && internal::Aligned16(ptrs...);
}

template <typename T, int kVec>
absl::Status LaunchBackward(T* dinp, const T* inp, const T* dout, int64_t n, int64_t m, bool accumulate,
                            cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(CeilDiv(n * m / kVec, kThreads));
  if (accumulate) {
    internal::LaunchKernel(SwiGluBackwardKernel<T, kVec, true>, blocks, kThreads, 0, stream, dinp, inp, dout, n, m);
  } else {
    internal::LaunchKernel(SwiGluBackwardKernel<T, kVec, false>, blocks, kThreads, 0, stream, dinp, inp, dout, n, m);
  }
  return LaunchStatus("SwiGluBackwardKernel");
}

}  // namespace

template <typename T>
absl::Status SwiGluForward(T* out, const T* inp, int64_t n, int64_t m, cudaStream_t stream) {
  constexpr const char* kFn = "SwiGluForward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckShape(kFn, n, m));
  if (n == 0 || m == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "out", out));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
  if (CanPack<T>(m, out, inp)) {
    constexpr int kVec = internal::kPackWidth<T>;
    internal::LaunchKernel(SwiGluForwardKernel<T, kVec>, static_cast<unsigned>(CeilDiv(n * m / kVec, kThreads)),
                           kThreads, 0, stream, out, inp, n, m);
  } else {
    internal::LaunchKernel(SwiGluForwardKernel<T, 1>, static_cast<unsigned>(CeilDiv(n * m, kThreads)), kThreads, 0,
                           stream, out, inp, n, m);
  }
  return LaunchStatus("SwiGluForwardKernel");
}

template <typename T>
absl::Status SwiGluBackward(T* dinp, const T* inp, const T* dout, int64_t n, int64_t m, cudaStream_t stream,
                            GradMode mode) {
  constexpr const char* kFn = "SwiGluBackward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckShape(kFn, n, m));
  if (n == 0 || m == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dinp", dinp));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dout", dout));
  const bool accumulate = mode == GradMode::kAccumulate;
  if (CanPack<T>(m, dinp, inp, dout)) {
    return LaunchBackward<T, internal::kPackWidth<T>>(dinp, inp, dout, n, m, accumulate, stream);
  }
  return LaunchBackward<T, 1>(dinp, inp, dout, n, m, accumulate, stream);
}

template absl::Status SwiGluForward<float>(float*, const float*, int64_t, int64_t, cudaStream_t);
template absl::Status SwiGluForward<bf16>(bf16*, const bf16*, int64_t, int64_t, cudaStream_t);
template absl::Status SwiGluBackward<float>(float*, const float*, const float*, int64_t, int64_t, cudaStream_t,
                                            GradMode);
template absl::Status SwiGluBackward<bf16>(bf16*, const bf16*, const bf16*, int64_t, int64_t, cudaStream_t, GradMode);

}  // namespace gradsync::kernels::cuda

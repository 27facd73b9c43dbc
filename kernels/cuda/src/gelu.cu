// GELU forward and backward (math in gelu.cuh).
#include "gradsync/kernels/cuda/gelu.cuh"

#include "common.cuh"
#include "elementwise.cuh"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::ClampedExp;

constexpr float kSqrt2OverPi = 0.797884560802865355879892119868763737f;
constexpr float kCubic = 0.044715f;

struct GeluOp {
  __device__ float operator()(const float (&in)[1]) const {
    const float x = in[0];
    const float u = kSqrt2OverPi * (x + kCubic * x * x * x);
    return x * (1.0f / (1.0f + ClampedExp(-2.0f * u)));
  }
};

// in = {x, dy}: gelu'(x) * dy.
struct GeluGradOp {
  __device__ float operator()(const float (&in)[2]) const {
    const float x = in[0];
    const float u = kSqrt2OverPi * (x + kCubic * x * x * x);
    const float e = ClampedExp(-2.0f * u);
    const float s = 1.0f / (1.0f + e);
    const float one_minus_s = e * s;
    const float du_dx = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
    return (s + 2.0f * x * s * one_minus_s * du_dx) * in[1];
  }
};

}  // namespace

template <typename T>
absl::Status GeluForward(T* out, const T* inp, int64_t n, cudaStream_t stream) {
  constexpr const char* kFn = "GeluForward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(kFn, "n", n));
  if (n == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "out", out));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
  return internal::LaunchMap<T, 1, false>("GeluForwardKernel", out, internal::Inputs<T, 1>{{inp}}, n, GeluOp{}, stream);
}

template <typename T>
absl::Status GeluBackward(T* dinp, const T* inp, const T* dout, int64_t n, cudaStream_t stream, GradMode mode) {
  constexpr const char* kFn = "GeluBackward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(kFn, "n", n));
  if (n == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dinp", dinp));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dout", dout));
  const internal::Inputs<T, 2> inputs{{inp, dout}};
  if (mode == GradMode::kOverwrite) {
    return internal::LaunchMap<T, 2, false>("GeluBackwardKernel", dinp, inputs, n, GeluGradOp{}, stream);
  }
  return internal::LaunchMap<T, 2, true>("GeluBackwardKernel", dinp, inputs, n, GeluGradOp{}, stream);
}

template absl::Status GeluForward<float>(float*, const float*, int64_t, cudaStream_t);
template absl::Status GeluForward<bf16>(bf16*, const bf16*, int64_t, cudaStream_t);
template absl::Status GeluBackward<float>(float*, const float*, const float*, int64_t, cudaStream_t, GradMode);
template absl::Status GeluBackward<bf16>(bf16*, const bf16*, const bf16*, int64_t, cudaStream_t, GradMode);

}  // namespace gradsync::kernels::cuda

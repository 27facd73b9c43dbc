// Residual add and gradient accumulation (math in residual.cuh).
#include "gradsync/kernels/cuda/residual.cuh"

#include "common.cuh"
#include "elementwise.cuh"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;

struct AddOp {
  __device__ float operator()(const float (&in)[2]) const { return in[0] + in[1]; }
};

struct CopyOp {
  __device__ float operator()(const float (&in)[1]) const { return in[0]; }
};

}  // namespace

template <typename T>
absl::Status ResidualForward(T* out, const T* a, const T* b, int64_t n, cudaStream_t stream) {
  constexpr const char* kFn = "ResidualForward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(kFn, "n", n));
  if (n == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "out", out));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "a", a));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "b", b));
  return internal::LaunchMap<T, 2, false>("ResidualForwardKernel", out, internal::Inputs<T, 2>{{a, b}}, n, AddOp{},
                                          stream);
}

template <typename T>
absl::Status AccumulateInto(T* dst, const T* src, int64_t n, cudaStream_t stream) {
  constexpr const char* kFn = "AccumulateInto";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(kFn, "n", n));
  if (n == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dst", dst));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "src", src));
  return internal::LaunchMap<T, 1, true>("AccumulateIntoKernel", dst, internal::Inputs<T, 1>{{src}}, n, CopyOp{},
                                         stream);
}

template absl::Status ResidualForward<float>(float*, const float*, const float*, int64_t, cudaStream_t);
template absl::Status ResidualForward<bf16>(bf16*, const bf16*, const bf16*, int64_t, cudaStream_t);
template absl::Status AccumulateInto<float>(float*, const float*, int64_t, cudaStream_t);
template absl::Status AccumulateInto<bf16>(bf16*, const bf16*, int64_t, cudaStream_t);

}  // namespace gradsync::kernels::cuda

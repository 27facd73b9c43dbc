// AdamW update (math in adamw.cuh).
#include "gradsync/kernels/cuda/adamw.cuh"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::CeilDiv;
using internal::ToFloat;

constexpr int kThreads = 256;

// The per-element constants, each rounded to float once on the host as the CPU reference does.
struct AdamWConstants {
  float beta1, beta2, one_minus_beta1, one_minus_beta2, inv_bc1, inv_bc2, eps, lr, wd;
};

template <typename TG>
__global__ void AdamWKernel(float* params, bf16* model, const TG* grads, float* m, float* v, int64_t n,
                            AdamWConstants k, const float* grad_scale) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float g = ToFloat(grads[i]);
  if (grad_scale != nullptr) g *= *grad_scale;
  const float mi = k.beta1 * m[i] + k.one_minus_beta1 * g;
  const float vi = k.beta2 * v[i] + k.one_minus_beta2 * g * g;
  m[i] = mi;
  v[i] = vi;
  const float m_hat = mi * k.inv_bc1;
  const float v_hat = vi * k.inv_bc2;
  const float p = params[i];
  const float updated = p - k.lr * (m_hat / (sqrtf(v_hat) + k.eps) + k.wd * p);
  params[i] = updated;
  if (model != nullptr) model[i] = __float2bfloat16_rn(updated);
}

}  // namespace

template <typename TG>
absl::Status AdamWUpdate(float* params, bf16* model, const TG* grads, float* m, float* v, int64_t n,
                         const AdamWHyper& hyper, const float* grad_scale, cudaStream_t stream) {
  constexpr const char* kFn = "AdamWUpdate";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(kFn, "n", n));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::Positive(kFn, "hyper.step", hyper.step));
  if (n == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "params", params));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "grads", grads));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "m", m));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "v", v));
  const double t = static_cast<double>(hyper.step);
  const float beta1 = static_cast<float>(hyper.beta1);
  const float beta2 = static_cast<float>(hyper.beta2);
  const AdamWConstants k{beta1,
                         beta2,
                         1.0f - beta1,
                         1.0f - beta2,
                         static_cast<float>(1.0 / (1.0 - std::pow(hyper.beta1, t))),
                         static_cast<float>(1.0 / (1.0 - std::pow(hyper.beta2, t))),
                         static_cast<float>(hyper.eps),
                         static_cast<float>(hyper.lr),
                         hyper.decay ? static_cast<float>(hyper.weight_decay) : 0.0f};
  internal::LaunchKernel(AdamWKernel<TG>, static_cast<unsigned>(CeilDiv(n, kThreads)), kThreads, 0, stream, params,
                         model, grads, m, v, n, k, grad_scale);
  return LaunchStatus("AdamWKernel");
}

template absl::Status AdamWUpdate<float>(float*, bf16*, const float*, float*, float*, int64_t, const AdamWHyper&,
                                         const float*, cudaStream_t);
template absl::Status AdamWUpdate<bf16>(float*, bf16*, const bf16*, float*, float*, int64_t, const AdamWHyper&,
                                        const float*, cudaStream_t);

}  // namespace gradsync::kernels::cuda

// AdamW on fp32 master weights (kernels/cpu/adamw.h), over a flat range of n parameters at step t
// (1-based), with an optional bf16 copy of the updated weights for the forward pass:
//
//   g     = grad * grad_scale                 (grad_scale from ClipScale, or 1)
//   m     = beta1 * m + (1 - beta1) * g
//   v     = beta2 * v + (1 - beta2) * g^2
//   m_hat = m / (1 - beta1^t)
//   v_hat = v / (1 - beta2^t)
//   p     = p - lr * (m_hat / (sqrt(v_hat) + eps) + wd * p)      (wd term only if decay)
//   model = bf16(p)                           (round to nearest even; when model is not null)
//
// The decay is decoupled, and per range (biases and norm gains get decay = false), as on the
// CPU: call once per parameter range. The bias corrections are computed on the host in double.
// grad_scale is read on the device, so the clip factor of global_norm.cuh never visits the host.
// Elementwise with no reduction: deterministic.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "gradsync/kernels/adamw_hyper.h"

namespace gradsync::kernels::cuda {

// Updates params (fp32 master), m and v in place from grads, and writes model (bf16) when not
// null. grad_scale is a device pointer to one float, or null for 1. TG (the gradient type) is
// float or __nv_bfloat16. INVALID_ARGUMENT for n < 0, step < 1 or a null required buffer.
template <typename TG>
absl::Status AdamWUpdate(float* params, __nv_bfloat16* model, const TG* grads, float* m, float* v, int64_t n,
                         const AdamWHyper& hyper, const float* grad_scale, cudaStream_t stream);

}  // namespace gradsync::kernels::cuda

// RMSNorm over the last dimension of [N, C] rows (llama flavour), as kernels/cpu/rmsnorm.h:
//
//   rstd    = 1 / sqrt((1/C) sum_i x_i^2 + eps)
//   xhat_i  = x_i * rstd
//   y_i     = w_i * xhat_i
//
// Backward, with g_i = w_i * dy_i:
//   dx_i   += rstd * (g_i - xhat_i * mean_j(g_j * xhat_j))
//   dw_i   += sum_rows dy_i * xhat_i
//
// Same structure as layernorm.cuh: a warp per row for the statistics and dx, a deterministic
// column reduction (partials in `scratch`) for dw; fp32 arithmetic, rstd saved as fp32.
// Deterministic: no atomics.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace gradsync::kernels::cuda {

// Overwrites out [n, c] and, when not null, rstd [n]. INVALID_ARGUMENT for n < 0, c < 1 or a null
// inp/out/weight.
template <typename T>
absl::Status RmsNormForward(T* out, float* rstd, const T* inp, const T* weight, int64_t n, int64_t c, float eps,
                            cudaStream_t stream);

// As LayerNormBackwardScratchFloats, for RmsNormBackward.
int64_t RmsNormBackwardScratchFloats(int64_t n, int64_t c);

// Accumulates into dinp [n, c] and dweight [c]; a null one is skipped.
template <typename T>
absl::Status RmsNormBackward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const float* rstd,
                             int64_t n, int64_t c, float* scratch, int64_t scratch_floats, cudaStream_t stream);

}  // namespace gradsync::kernels::cuda

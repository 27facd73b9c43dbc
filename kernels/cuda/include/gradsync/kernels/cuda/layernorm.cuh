// LayerNorm over the last dimension of [N, C] rows (gpt2 flavour), as kernels/cpu/layernorm.h:
//
//   mu      = (1/C) sum_i x_i
//   var     = (1/C) sum_i (x_i - mu)^2                (biased, as in PyTorch and llm.c)
//   rstd    = 1 / sqrt(var + eps)
//   xhat_i  = (x_i - mu) * rstd
//   y_i     = w_i * xhat_i + b_i
//
// Backward, with g_i = w_i * dy_i:
//   dx_i   += rstd * (g_i - mean_j(g_j) - xhat_i * mean_j(g_j * xhat_j))
//   dw_i   += sum_rows dy_i * xhat_i
//   db_i   += sum_rows dy_i
//
// One warp per row computes the statistics (two passes over the row: the mean, then the squared
// deviations, so no E[x^2] - E[x]^2 cancellation) and the dx of the backward pass. dw and db are
// column sums over all rows: a separate deterministic two-pass reduction (column_reduce.cuh) whose
// partial sums live in `scratch`. All arithmetic is fp32; mean and rstd are saved as fp32 whatever T
// is. Deterministic: no atomics; every sum's order depends only on (n, c, scratch size).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace gradsync::kernels::cuda {

// Overwrites out [n, c] and, when not null, mean [n] and rstd [n]. T is float or __nv_bfloat16.
// INVALID_ARGUMENT for n < 0, c < 1 or a null inp/out/weight/bias.
template <typename T>
absl::Status LayerNormForward(T* out, float* mean, float* rstd, const T* inp, const T* weight, const T* bias, int64_t n,
                              int64_t c, float eps, cudaStream_t stream);

// The scratch (floats) with which LayerNormBackward reduces dweight and dbias fastest; less (even
// none) is allowed and gives fewer partial sums. Results depend on the amount given, so pass the
// same amount every step.
int64_t LayerNormBackwardScratchFloats(int64_t n, int64_t c);

// Accumulates into dinp [n, c], dweight [c] and dbias [c]; a null one is skipped.
// INVALID_ARGUMENT for n < 0, c < 1 or a null input the requested gradients need.
template <typename T>
absl::Status LayerNormBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                               const float* mean, const float* rstd, int64_t n, int64_t c, float* scratch,
                               int64_t scratch_floats, cudaStream_t stream);

}  // namespace gradsync::kernels::cuda

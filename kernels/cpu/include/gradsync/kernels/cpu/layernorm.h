// LayerNorm over the last dimension of [N, C] rows (gpt2 flavour):
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
// Row statistics and the two means of the backward are accumulated in double; mean and rstd are
// saved per row by the forward pass for the backward pass. Rows are processed in order:
// deterministic. Preconditions: buffers hold the elements their shapes say; c >= 1; outputs do
// not alias inputs.
#pragma once

#include <cstdint>

namespace gradsync::kernels::cpu {

// Overwrites out [n, c], mean [n] and rstd [n].
template <typename T>
void LayerNormForward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int64_t n, int64_t c,
                      double eps);

// Accumulates into dinp [n, c], dweight [c] and dbias [c].
template <typename T>
void LayerNormBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const T* mean,
                       const T* rstd, int64_t n, int64_t c);

}  // namespace gradsync::kernels::cpu

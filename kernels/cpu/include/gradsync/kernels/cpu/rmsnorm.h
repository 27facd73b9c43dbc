// RMSNorm over the last dimension of [N, C] rows (llama flavour; no mean subtraction, no bias):
//
//   rstd    = 1 / sqrt((1/C) sum_i x_i^2 + eps)
//   xhat_i  = x_i * rstd
//   y_i     = w_i * xhat_i
//
// Backward, with g_i = w_i * dy_i:
//   dx_i   += rstd * (g_i - xhat_i * mean_j(g_j * xhat_j))
//   dw_i   += sum_rows dy_i * xhat_i
//
// The sums run in double; rstd is saved per row for the backward pass. Rows are processed in
// order: deterministic. Preconditions: buffers hold the elements their shapes say; c >= 1;
// outputs do not alias inputs.
#pragma once

#include <cstdint>

namespace gradsync::kernels::cpu {

// Overwrites out [n, c] and rstd [n].
template <typename T>
void RmsNormForward(T* out, T* rstd, const T* inp, const T* weight, int64_t n, int64_t c, double eps);

// Accumulates into dinp [n, c] and dweight [c].
template <typename T>
void RmsNormBackward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const T* rstd, int64_t n,
                     int64_t c);

}  // namespace gradsync::kernels::cpu

// Rotary position embedding with the "rotate half" pairing of kernels/cpu/rope.h (llama, HF),
// applied in place to `heads` vectors of head_dim D in every (b, t) row. With D/2 = h:
//
//   freq_i       = theta^(-2i / D)                   for i in [0, h)
//   cos[t, i]    = cos(t * freq_i),  sin[t, i] = sin(t * freq_i)     (tables, computed in double)
//   forward:  y_i     = x_i * cos - x_{i+h} * sin
//             y_{i+h} = x_{i+h} * cos + x_i * sin
//   backward: the transpose (inverse) rotation, also in place:
//             dx_i     = dy_i * cos + dy_{i+h} * sin
//             dx_{i+h} = dy_{i+h} * cos - dy_i * sin
//
// Rows are `row_stride` elements apart with the vectors contiguous from the row's start, so the
// q and k heads of a fused qkv row rotate in one call (heads = H + KVH, row_stride = qkv width).
// The tables are fp32 whatever T is; one thread rotates one (x_i, x_{i+h}) pair in fp32.
// Like the CPU version the backward does not accumulate: it rotates the gradient where it lies.
// Deterministic.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace gradsync::kernels::cuda {

// Fills cos and sin [seq_len, head_dim / 2] on the device (angles and trigonometry in double, as
// the CPU tables). INVALID_ARGUMENT for seq_len < 0, an odd or non-positive head_dim, theta <= 0.
absl::Status RopeTables(float* cos, float* sin, int64_t seq_len, int64_t head_dim, double theta, cudaStream_t stream);

// T is float or __nv_bfloat16. INVALID_ARGUMENT for negative sizes, an odd head_dim, a row_stride
// shorter than heads * head_dim, or a null buffer. The tables hold at least seq_len rows.
template <typename T>
absl::Status RopeForward(T* x, const float* cos, const float* sin, int64_t batch, int64_t seq_len, int64_t heads,
                         int64_t head_dim, int64_t row_stride, cudaStream_t stream);

template <typename T>
absl::Status RopeBackward(T* dx, const float* cos, const float* sin, int64_t batch, int64_t seq_len, int64_t heads,
                          int64_t head_dim, int64_t row_stride, cudaStream_t stream);

}  // namespace gradsync::kernels::cuda

// Rotary position embedding (RoFormer; the "rotate half" pairing of llama, HF and MiniMind),
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
// Rows are `row_stride` elements apart and each row's vectors are contiguous from its start, so
// the q and k heads of a fused qkv row [q heads | k heads | v heads] are rotated in one call with
// heads = H + KVH and row_stride = (H + 2 KVH) * D.
// Unlike the other backward kernels this one does not accumulate: the rotation is orthogonal and
// needs no saved input, so the gradient is rotated where it lies.
// Preconditions: D even; tables hold at least seq_len rows of D/2; buffers hold their shapes.
#pragma once

#include <cstdint>

namespace gradsync::kernels::cpu {

// Fills cos and sin [seq_len, head_dim / 2].
template <typename T>
void RopeTables(T* cos, T* sin, int64_t seq_len, int64_t head_dim, double theta);

template <typename T>
void RopeForward(T* x, const T* cos, const T* sin, int64_t batch, int64_t seq_len, int64_t heads, int64_t head_dim,
                 int64_t row_stride);

template <typename T>
void RopeBackward(T* dx, const T* cos, const T* sin, int64_t batch, int64_t seq_len, int64_t heads, int64_t head_dim,
                  int64_t row_stride);

}  // namespace gradsync::kernels::cpu

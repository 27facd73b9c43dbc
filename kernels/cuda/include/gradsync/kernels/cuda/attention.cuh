// Causal self-attention with grouped-query heads on a fused qkv projection, FlashAttention-style:
// the same function as kernels/cpu/attention.h, without the [B, H, T, T] probabilities.
//
// Shapes (row-major): qkv [B, T, (H + 2 KVH) D] holds per (b, t) the H query heads, then the KVH
// key heads, then the KVH value heads; query head h reads key/value head g = h / (H / KVH).
// out and dout [B, T, H D]; lse and delta [B, H, T] (fp32).
//
//   S[i, j]   = (q_i . k_j) / sqrt(D)                         for j <= i (causal)
//   lse_i     = log sum_{j <= i} exp(S[i, j])                 (saved by the forward pass)
//   P[i, j]   = exp(S[i, j] - lse_i)
//   out_i     = sum_j P[i, j] v_j
//
// Backward, recomputing P from q, k and lse instead of storing it:
//   delta_i   = dout_i . out_i                   (= sum_j P[i, j] dP[i, j])
//   dP[i, j]  = dout_i . v_j
//   dS[i, j]  = P[i, j] (dP[i, j] - delta_i)
//   dq_i     += sum_j dS[i, j] k_j / sqrt(D)
//   dk_j     += sum_{h in group} sum_i dS[i, j] q_i / sqrt(D)
//   dv_j     += sum_{h in group} sum_i P[i, j] dout_i
//
// Forward: a block owns 64 query rows of one (b, h) (8 warps x 8 rows) and streams the keys and
// values of rows 0..last in tiles of 32 through shared memory, one key per lane. Each row keeps an
// online softmax (running max m and sum l, in base 2 after folding log2(e) into the scale) and
// its output in registers, rescaled by 2^(m_old - m_new) when the max grows. Tiles above the
// diagonal are skipped per row.
// Backward: one kernel per gradient side, so that no two blocks add into the same element:
// dQ blocks own 64 query rows and stream key tiles; dK/dV blocks own 64 keys of one kv head and
// stream query tiles of every query head in the group. No atomics anywhere, and every sum runs
// in a fixed order: deterministic. All arithmetic is fp32 (inputs converted once as tiles load);
// the probabilities are not rounded to T. Head dims 32, 64 and 128 (compile-time, so register
// arrays stay in registers). These are CUDA-core (SIMT) kernels written for exactness first; for
// speed in bf16 see attention_gemm.cuh (tensor cores, at the cost of keeping the probabilities).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "gradsync/kernels/attention_shape.h"

namespace gradsync::kernels::cuda {

// Overwrites out [B, T, H D] and lse [B, H, T]. T is float or __nv_bfloat16.
// INVALID_ARGUMENT unless batch, seq_len >= 0, heads, kv_heads >= 1 (at most 65535),
// kv_heads divides heads, head_dim is 32, 64 or 128, and the buffers are not null.
template <typename T>
absl::Status AttentionForward(T* out, float* lse, const T* qkv, const AttentionShape& shape, cudaStream_t stream);

// Accumulates into dqkv [B, T, (H + 2 KVH) D]. `out` and `lse` are the forward pass's; delta
// [B, H, T] is scratch, overwritten. Errors as AttentionForward.
template <typename T>
absl::Status AttentionBackward(T* dqkv, float* delta, const T* dout, const T* qkv, const T* out, const float* lse,
                               const AttentionShape& shape, cudaStream_t stream);

}  // namespace gradsync::kernels::cuda

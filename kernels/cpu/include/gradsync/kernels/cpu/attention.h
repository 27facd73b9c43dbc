// Causal multi-head self-attention with grouped-query heads, reading a fused qkv projection.
//
// Shapes (row-major): qkv [B, T, (H + 2 KVH) D] holds per (b, t) the H query heads, then the KVH
// key heads, then the KVH value heads, each D wide. Query head h reads key/value head
// g = h / (H / KVH) (KVH divides H; KVH = H is plain multi-head attention). out [B, T, H D] holds
// the heads side by side; att [B, H, T, T] keeps the probabilities for the backward pass.
//
//   S[i, j]   = (q_i . k_j) / sqrt(D)                         for j <= i (causal)
//   P[i, j]   = exp(S[i, j] - max_j S[i, j]) / sum_{j <= i} exp(S[i, j] - max)
//   P[i, j]   = 0                                             for j > i
//   out_i     = sum_j P[i, j] v_j
//
// Backward (per (b, h); dS needs no more than P and dP):
//   dP        = dout V^T
//   dV       += P^T dout                                  (summed over the heads of a group)
//   dS[i, j]  = P[i, j] (dP[i, j] - sum_k P[i, k] dP[i, k])
//   dQ       += dS K / sqrt(D),   dK += dS^T Q / sqrt(D)
//
// The products run on BLAS per (b, h) with the strided heads read in place (lda = row width);
// the full T x T score matrix is computed and its upper triangle masked, which wastes half of
// those products but keeps them in one sgemm. The softmax runs in T's precision after
// subtracting the row maximum, with its sum in double. For a fixed BLAS build and thread count
// the results are deterministic; a later token never changes an earlier row's output bits (its
// weight is exactly 0). Memory: att is B H T^2 elements (8 MiB per layer for B 8, H 4, T 256).
// Preconditions: H % KVH == 0, D >= 1; buffers hold their shapes; scratch holds T * T elements.
#pragma once

#include "gradsync/kernels/attention_shape.h"

namespace gradsync::kernels::cpu {

// Overwrites out and att.
template <typename T>
void AttentionForward(T* out, T* att, const T* qkv, const AttentionShape& shape);

// Accumulates into dqkv. `att` is the forward pass's; `scratch` is overwritten.
template <typename T>
void AttentionBackward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, const AttentionShape& shape);

}  // namespace gradsync::kernels::cpu

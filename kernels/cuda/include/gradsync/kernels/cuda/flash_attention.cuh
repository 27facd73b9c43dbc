// Causal self-attention on tensor cores, FlashAttention-2 style, in bf16: the function, shapes and
// saved statistics of attention.cuh (out, lse, delta), computed with mma.sync bf16 products and
// fp32 accumulation instead of fp32 CUDA-core arithmetic, and without the [B, H, T, T]
// probabilities that attention_gemm.cuh keeps.
//
// Forward: a block of 4 warps owns 64 query rows of one (b, h), 16 per warp. Each warp keeps its
// queries as A fragments and its output [16, D] as fp32 accumulators in registers. Key and value
// tiles of 64 rows stream through shared memory, double-buffered with asynchronous copies; per
// tile a warp forms S = q k^T (fp32), masks the causal triangle, keeps an online softmax in base 2
// (running max m and sum l per row, the row spread over the 4 lanes of a quad), rounds
// P = 2^(S log2(e)/sqrt(D) - m) to bf16 straight from the accumulators into the A fragment of
// P v, and adds P v into the output after rescaling it by 2^(m_old - m_new). On the diagonal tile
// a warp skips the 8-key slices right of its last row.
//
// Backward, two kernels so that no two blocks write one element (no atomics, fixed order of every
// sum: deterministic):
//   dQ:  per 64 query rows of (b, h), also writing delta_i = dout_i . out_i; streams key and value
//        tiles: S = q k^T, P from lse, dP = dout v^T, dS = P (dP - delta), dq += dS k.
//   dKV: per 64 keys of (b, kv head g), keys and values as A fragments in registers; streams the
//        query tiles at or below the diagonal of every query head of the group, computing the
//        transposed products directly (S^T = k q^T, dP^T = v dout^T) so that P^T and dS^T feed
//        dv += P^T dout and dk += dS^T q from the accumulators.
// P and dS are rounded to bf16 as product inputs, as in attention_gemm.cuh; the softmax
// statistics, the sums and delta stay fp32. dqkv is accumulated into, or written (one rounding
// per element either way).
//
// Requirements beyond attention.cuh's: head_dim 32 or 64 (the dK/dV kernel keeps 2 D^2/16 fp32
// accumulators per lane; 128 would spill), every pointer 16-byte aligned, and a device of compute
// capability 8.0 or later (FAILED_PRECONDITION otherwise).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "gradsync/kernels/cuda/attention.cuh"
#include "gradsync/kernels/cuda/grad_mode.h"

namespace gradsync::kernels::cuda {

// True when the kernels take this shape's head_dim (the rest is checked by the calls).
bool FlashAttentionSupports(const AttentionShape& shape);

// True when the current device runs the kernels (compute capability 8.0 or later).
bool FlashAttentionDeviceSupported();

// Overwrites out [B, T, H D] and lse [B, H, T]; as AttentionForward<bf16>.
absl::Status FlashAttentionForward(__nv_bfloat16* out, float* lse, const __nv_bfloat16* qkv,
                                   const AttentionShape& shape, cudaStream_t stream);

// Accumulates into dqkv [B, T, (H + 2 KVH) D] (writes every element of it with
// GradMode::kOverwrite) and overwrites delta [B, H, T]; as AttentionBackward<bf16>.
absl::Status FlashAttentionBackward(__nv_bfloat16* dqkv, float* delta, const __nv_bfloat16* dout,
                                    const __nv_bfloat16* qkv, const __nv_bfloat16* out, const float* lse,
                                    const AttentionShape& shape, cudaStream_t stream,
                                    GradMode mode = GradMode::kAccumulate);

}  // namespace gradsync::kernels::cuda

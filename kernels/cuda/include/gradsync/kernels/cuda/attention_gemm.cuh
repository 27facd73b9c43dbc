// Causal self-attention on tensor cores through batched cuBLASLt products, for bf16: the same
// function as attention.cuh (and kernels/cpu/attention.h), the way llm.c's GPT-2 trains, with
// the probabilities kept for the backward pass instead of recomputed. The fused kernels of
// attention.cuh run on CUDA cores; on GPT-2 shapes these products run the bulk of the work on
// tensor cores.
//
// Per (b, h), with q, k, v the [T, D] rows of head h (k and v of its kv head g = h / (H / KVH)),
// s = 1 / sqrt(D):
//   forward   S = q k^T (fp32)    P = causal softmax(s S) (bf16, saved)    o = P v
//   backward  dP = do v^T (fp32)   dv = P^T do   dS = s P (dP - rowsum(P dP)) (bf16)
//             dq = dS k   dk = dS^T q;   dk and dv of a kv head sum its query heads' in order
// The products cover the full [T, T] square (the masked half is multiplied by zeros); the
// softmax kernels write exact zeros above the diagonal. The products read q, k, v and dout, and
// write out and dqkv, where they lie in the [B, T, width] rows, with no gather into per-head
// buffers: each is a strided-batched cuBLASLt call over the heads of one sequence (per residue of
// a kv group with grouped queries), fp32 accumulation, adding into dqkv (with grouped queries a
// kv head's dk and dv first sum over its query heads in fp32, then add with one rounding). Every reduction runs in
// a fixed order and no kernel adds atomically: the result is reproducible bit for bit on one GPU
// model.
//
// Memory: probs [B, H, T, T] bf16 per layer (kept from forward to backward), and a scratch of
// AttentionGemmScratchBytes(shape) that any layer may reuse: the scores / dP as [B, H, T, T]
// fp32, dS as [B, H, T, T] bf16, and with grouped queries the dk and dv sums [B, T, 2 KVH D] fp32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "absl/status/status.h"
#include "gradsync/kernels/cuda/attention.cuh"
#include "gradsync/kernels/cuda/matmul.cuh"

namespace gradsync::kernels::cuda {

// Elements of one layer's saved probabilities: B H T T.
size_t AttentionGemmProbsCount(const AttentionShape& shape);
// Bytes of scratch the two passes need.
size_t AttentionGemmScratchBytes(const AttentionShape& shape);

// Overwrites out [B, T, H D] and probs [B, H, T, T]. INVALID_ARGUMENT for the shapes
// attention.cuh refuses, null buffers, or a scratch smaller than AttentionGemmScratchBytes;
// cuBLASLt's and the launches' errors otherwise.
absl::Status AttentionGemmForward(MatmulContext& ctx, __nv_bfloat16* out, __nv_bfloat16* probs,
                                  const __nv_bfloat16* qkv, const AttentionShape& shape, void* scratch,
                                  size_t scratch_bytes, cudaStream_t stream);

// Accumulates into dqkv [B, T, (H + 2 KVH) D]; probs are the forward pass's. Errors as above.
absl::Status AttentionGemmBackward(MatmulContext& ctx, __nv_bfloat16* dqkv, const __nv_bfloat16* dout,
                                   const __nv_bfloat16* qkv, const __nv_bfloat16* probs, const AttentionShape& shape,
                                   void* scratch, size_t scratch_bytes, cudaStream_t stream);

}  // namespace gradsync::kernels::cuda

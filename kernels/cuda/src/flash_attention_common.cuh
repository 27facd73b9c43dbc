// Tiling, tile copies and checks of the tensor-core attention kernels (flash_attention.cuh).
// Private to kernels/cuda.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "attention_common.cuh"
#include "gradsync/kernels/cuda/flash_attention.cuh"
#include "mma.cuh"

namespace gradsync::kernels::cuda::internal {

inline constexpr int kFlashWarps = 4;
inline constexpr int kFlashThreads = kFlashWarps * kWarpSize;
// Rows a warp owns (one m16 fragment) and rows of a block and of a streamed tile.
inline constexpr int kFlashWarpRows = mma::kM;
inline constexpr int kFlashRows = kFlashWarps * kFlashWarpRows;
// 8-row slices of a tile (n8 fragments) and 16-row slices (k16 fragments).
inline constexpr int kFlashSlices = kFlashRows / mma::kN;

// A tile [64][D] of bf16 in shared memory, rows padded by 8 elements (16 bytes): rows stay
// 16-byte aligned for the copies and ldmatrix, and the 8 rows of an 8x8 matrix, (D + 8) / 2 words
// apart, start on 8 distinct groups of 4 banks, so each ldmatrix phase (and LoadA's pair loads)
// is free of bank conflicts.
template <int D>
struct FlashTile {
  static_assert(D % 32 == 0, "the fragment loads take head dims in pairs of k16 chunks");
  static constexpr int kLd = D + 8;
  static constexpr int kElems = kFlashRows * kLd;
  static constexpr size_t kBytes = kElems * sizeof(bf16);
};

// Where a query-block kernel (forward, dQ) works, from its block index: the 64 query rows from q0
// of head h of sequence b, the kv head g they read, where the sequence's qkv rows and g's keys
// and values start, and the key tiles 0..tiles-1 it streams (the last, k0 = q0, holds the
// diagonal). The last query blocks see the most keys: they start first so they do not form the
// tail.
template <int D>
struct QueryBlock {
  int64_t q0, b;
  int h, g, tiles;
  const bf16 *rows, *k_head, *v_head;

  __device__ __forceinline__ QueryBlock(const bf16* qkv, const AttnDims& dims)
      : q0(static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kFlashRows),
        b(blockIdx.z),
        h(static_cast<int>(blockIdx.y)),
        g(h / (dims.heads / dims.kv_heads)),
        tiles(static_cast<int>(q0 / kFlashRows) + 1),
        rows(qkv + b * dims.seq_len * dims.qkv_row),
        k_head(rows + static_cast<int64_t>(dims.heads + g) * D),
        v_head(rows + static_cast<int64_t>(dims.heads + dims.kv_heads + g) * D) {}
};

// Starts copying rows [r0, r0 + 64) of one head (rows `src_row` elements apart, `src` at row 0)
// into `dst`; rows at or past seq_len become zeros. All threads of the block take part.
template <int D>
__device__ __forceinline__ void CopyTileAsync(bf16* dst, const bf16* src, int64_t src_row, int64_t r0,
                                              int64_t seq_len) {
  constexpr int kChunks = D / 8;  // 16-byte pieces per row
  for (int e = threadIdx.x; e < kFlashRows * kChunks; e += kFlashThreads) {
    const int r = e / kChunks, c = (e % kChunks) * 8;
    const int64_t t = r0 + r;
    const bool valid = t < seq_len;
    mma::CopyAsync16(dst + r * FlashTile<D>::kLd + c, src + (valid ? t : 0) * src_row + c, valid);
  }
}

// For the kernels that stream key/value tiles 0..tiles-1 through double buffers `sk` and `sv`:
// starts the copies of tile kt + 1 into the other buffers (consumed before the barrier that ended
// the previous tile), then waits until tile kt is in place for every thread.
template <int D>
__device__ __forceinline__ void StreamKeyValueTile(bf16* sk, bf16* sv, const bf16* k_head, const bf16* v_head,
                                                   int64_t src_row, int kt, int tiles, int64_t seq_len) {
  if (kt + 1 < tiles) {
    const int next = (kt + 1) & 1;
    const int64_t r0 = static_cast<int64_t>(kt + 1) * kFlashRows;
    CopyTileAsync<D>(sk + next * FlashTile<D>::kElems, k_head, src_row, r0, seq_len);
    CopyTileAsync<D>(sv + next * FlashTile<D>::kElems, v_head, src_row, r0, seq_len);
    mma::CommitCopies();
    mma::WaitCopies<1>();
  } else {
    mma::WaitCopies<0>();
  }
  __syncthreads();
}

// s[j] = a b_j^T for the 8-row slices j in [first, last) of `tile` ([64][D], rows of B^T: the
// keys of q k^T), zeros elsewhere; `a` holds the warp's 16 rows as D / 16 A fragments.
template <int D>
__device__ __forceinline__ void SliceProducts(mma::FragC (&s)[kFlashSlices], const mma::FragA (&a)[D / mma::kK],
                                              const bf16* tile, int first, int last, int lane) {
#pragma unroll
  for (int j = 0; j < kFlashSlices; ++j) {
    mma::Zero(s[j]);
    if (j < first || j >= last) continue;
#pragma unroll
    for (int c = 0; c < D / mma::kK; c += 2) {
      mma::FragB f0, f1;
      mma::LoadBNkPair(f0, f1, tile + j * mma::kN * FlashTile<D>::kLd + c * mma::kK, FlashTile<D>::kLd, lane);
      mma::Mma(s[j], a[c], f0);
      mma::Mma(s[j], a[c + 1], f1);
    }
  }
}

// acc += x tile over the slices [first, last) of x (both even): x's C fragments, rounded to bf16,
// are the A fragments of its 16-column chunks; `tile` [64][D] holds the rows of B (the values of
// P v).
template <int D>
__device__ __forceinline__ void AccumulateProducts(mma::FragC (&acc)[D / mma::kN], const mma::FragC (&x)[kFlashSlices],
                                                   const bf16* tile, int first, int last, int lane) {
#pragma unroll
  for (int kc = 0; kc < kFlashSlices / 2; ++kc) {
    if (2 * kc < first || 2 * kc >= last) continue;
    const mma::FragA a = mma::AFromC(x[2 * kc], x[2 * kc + 1]);
#pragma unroll
    for (int c = 0; c < D / mma::kN; c += 2) {
      mma::FragB f0, f1;
      mma::LoadBKnPair(f0, f1, tile + kc * mma::kK * FlashTile<D>::kLd + c * mma::kN, FlashTile<D>::kLd, lane);
      mma::Mma(acc[c], a, f0);
      mma::Mma(acc[c + 1], a, f1);
    }
  }
}

// 2^x on the special function unit: ex2.approx.ftz (about 2 ulp, as exp2f; results below 2^-126
// flush to 0, which probabilities can spare), without exp2f's extra steps for denormal results.
// 2^-inf = 0 for the masked scores. The host (the emulation) takes exp2f.
__device__ __forceinline__ float Exp2(float x) {
#ifdef __CUDA_ARCH__
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}

// Quad reductions: the four lanes of a quad hold one row of a C fragment between them.
__device__ __forceinline__ float QuadMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(kFullMask, v, 1));
  return fmaxf(v, __shfl_xor_sync(kFullMask, v, 2));
}
__device__ __forceinline__ float QuadSum(float v) {
  v += __shfl_xor_sync(kFullMask, v, 1);
  return v + __shfl_xor_sync(kFullMask, v, 2);
}

// dst[0..1] = (v0, v1) in bf16, added to what dst holds when kAccumulate; dst 4-byte aligned. One
// rounding per element.
template <bool kAccumulate>
__device__ __forceinline__ void StorePair(bf16* dst, float v0, float v1) {
  if constexpr (kAccumulate) {
    const uint32_t old = mma::LoadPair(dst);
    v0 += __uint_as_float(old << 16);
    v1 += __uint_as_float(old & 0xffff0000u);
  }
  *reinterpret_cast<uint32_t*>(dst) = mma::PackFloats(v0, v1);
}

// attention.cuh's checks, then head_dim, the device's compute capability, and the buffers: none
// null, the bf16 tensors 16-byte aligned (the tile copies move 16 bytes), the fp32 statistics
// (lse, delta) as they come.
using Buffers = std::initializer_list<std::pair<const char*, const void*>>;
absl::Status CheckFlashAttention(const char* fn, const AttentionShape& s, Buffers tensors, Buffers stats);

}  // namespace gradsync::kernels::cuda::internal

// The tensor-core attention forward kernel (math and tiling in flash_attention.cuh), a template
// on the head dim; launched by flash_attention_forward.cu, and run on the host by the warp
// emulation of tests/kernels_emulated.
#pragma once

#include "flash_attention_common.cuh"

namespace gradsync::kernels::cuda::internal {

using mma::FragA;
using mma::FragC;

// Shared memory: the block's queries, then two key tiles and two value tiles (double buffer).
template <int D>
constexpr size_t ForwardSmemBytes() {
  return 5 * FlashTile<D>::kBytes;
}

template <int D>
__global__ void __launch_bounds__(kFlashThreads)
    FlashForwardKernel(bf16* out, float* lse, const bf16* qkv, AttnDims dims, float scale_log2) {
  constexpr int kLd = FlashTile<D>::kLd, kTile = FlashTile<D>::kElems;
  constexpr int kChunks = D / mma::kK;  // k16 slices of a head
  constexpr int kCols = D / mma::kN;    // n8 slices of a head
  bf16* sq = reinterpret_cast<bf16*>(mma::SharedMemory());
  bf16* sk = sq + kTile;
  bf16* sv = sk + 2 * kTile;

  const QueryBlock<D> blk(qkv, dims);
  const int64_t q0 = blk.q0, b = blk.b, T = dims.seq_len;
  const int h = blk.h, tiles = blk.tiles;
  const bf16 *rows = blk.rows, *k_head = blk.k_head, *v_head = blk.v_head;

  CopyTileAsync<D>(sq, rows + static_cast<int64_t>(h) * D, dims.qkv_row, q0, T);
  CopyTileAsync<D>(sk, k_head, dims.qkv_row, 0, T);
  CopyTileAsync<D>(sv, v_head, dims.qkv_row, 0, T);
  mma::CommitCopies();

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  // This lane's two rows of every C fragment: group and group + 8 of the warp's 16.
  const int64_t row[2] = {q0 + warp * kFlashWarpRows + mma::Group(lane),
                          q0 + warp * kFlashWarpRows + mma::Group(lane) + 8};
  FragA q[kChunks];
  FragC o[kCols];
#pragma unroll
  for (int c = 0; c < kCols; ++c) mma::Zero(o[c]);
  float m[2] = {-INFINITY, -INFINITY};  // running max of the scaled scores, base 2
  float l[2] = {0.0f, 0.0f};            // this lane's part of the running sum 2^(S - m)

  for (int kt = 0; kt < tiles; ++kt) {
    const int buf = kt & 1;
    StreamKeyValueTile<D>(sk, sv, k_head, v_head, dims.qkv_row, kt, tiles, T);
    if (kt == 0) {
#pragma unroll
      for (int c = 0; c < kChunks; ++c) mma::LoadA(q[c], sq + warp * kFlashWarpRows * kLd + c * mma::kK, kLd, lane);
    }
    const bf16* kb = sk + buf * kTile;
    const bf16* vb = sv + buf * kTile;
    const int64_t k0 = static_cast<int64_t>(kt) * kFlashRows;
    // On the diagonal tile the warp's rows reach key k0 + 16 warp + 15: slices past it are masked.
    const int slices = kt + 1 == tiles ? 2 * warp + 2 : kFlashSlices;

    FragC s[kFlashSlices];
    SliceProducts<D>(s, q, kb, 0, slices, lane);

    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < kFlashSlices; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int64_t key = k0 + j * mma::kN + mma::CCol(lane, i);
        const float x = j < slices && key <= row[i >> 1] ? s[j].v[i] * scale_log2 : -INFINITY;
        s[j].v[i] = x;
        tile_max[i >> 1] = fmaxf(tile_max[i >> 1], x);
      }
    }
    float base[2], correction[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float m_new = fmaxf(m[r], QuadMax(tile_max[r]));
      // A row with no unmasked key yet keeps m = -inf; subtracting 0 then keeps every 2^x at 0.
      base[r] = m_new == -INFINITY ? 0.0f : m_new;
      correction[r] = Exp2(m[r] - base[r]);
      m[r] = m_new;
    }
    float tile_sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < kFlashSlices; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float p = Exp2(s[j].v[i] - base[i >> 1]);
        s[j].v[i] = p;
        tile_sum[i >> 1] += p;
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) l[r] = l[r] * correction[r] + tile_sum[r];
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      o[c].v[0] *= correction[0];
      o[c].v[1] *= correction[0];
      o[c].v[2] *= correction[1];
      o[c].v[3] *= correction[1];
    }
    // o += P v, 16 keys at a time; P's A fragment is two neighbouring slices of s.
    AccumulateProducts<D>(o, s, vb, 0, slices, lane);
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float sum = QuadSum(l[r]);
    if (row[r] >= T) continue;
    const float inv = 1.0f / sum;
    bf16* y = out + (b * T + row[r]) * dims.out_row + static_cast<int64_t>(h) * D + 2 * mma::Quad(lane);
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      *reinterpret_cast<uint32_t*>(y + c * mma::kN) = mma::PackFloats(o[c].v[2 * r] * inv, o[c].v[2 * r + 1] * inv);
    }
    // m and l are in base 2: log(sum exp(S)) = ln 2 * (m + log2 l).
    if (mma::Quad(lane) == 0) lse[(b * dims.heads + h) * T + row[r]] = (m[r] + log2f(sum)) * kLn2;
  }
}

}  // namespace gradsync::kernels::cuda::internal

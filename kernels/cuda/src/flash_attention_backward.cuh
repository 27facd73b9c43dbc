// The tensor-core attention backward kernels (math and tiling in flash_attention.cuh), templates
// on the head dim and on whether they add into dqkv or write it: dQ with delta, then dK/dV.
// Launched by flash_attention_backward.cu, and run on the host by the warp emulation of
// tests/kernels_emulated.
#pragma once

#include "flash_attention_common.cuh"

namespace gradsync::kernels::cuda::internal {

using mma::FragA;
using mma::FragC;

// Scale and dimensions shared by both kernels.
struct Params {
  AttnDims dims;
  float scale_log2;  // log2(e) / sqrt(D): S in base 2
  float scale;       // 1 / sqrt(D)
};

// ---- dQ ----

// Shared memory: the block's queries and dout, then two key and two value tiles.
template <int D>
constexpr size_t DqSmemBytes() {
  return 6 * FlashTile<D>::kBytes;
}

template <int D, bool kAccumulate>
__global__ void __launch_bounds__(kFlashThreads)
    FlashDqKernel(bf16* dqkv, float* delta, const bf16* dout, const bf16* qkv, const bf16* out, const float* lse,
                  Params prm) {
  constexpr int kLd = FlashTile<D>::kLd, kTile = FlashTile<D>::kElems;
  constexpr int kChunks = D / mma::kK, kCols = D / mma::kN;
  bf16* sq = reinterpret_cast<bf16*>(mma::SharedMemory());
  bf16* sdo = sq + kTile;
  bf16* sk = sdo + kTile;
  bf16* sv = sk + 2 * kTile;

  const AttnDims& dims = prm.dims;
  const QueryBlock<D> blk(qkv, dims);
  const int64_t q0 = blk.q0, b = blk.b, T = dims.seq_len;
  const int h = blk.h, tiles = blk.tiles;
  const bf16 *rows = blk.rows, *k_head = blk.k_head, *v_head = blk.v_head;
  const int64_t head_out = b * T * dims.out_row + static_cast<int64_t>(h) * D;  // row 0 of (b, h) in out, dout

  CopyTileAsync<D>(sq, rows + static_cast<int64_t>(h) * D, dims.qkv_row, q0, T);
  CopyTileAsync<D>(sdo, dout + head_out, dims.out_row, q0, T);
  CopyTileAsync<D>(sk, k_head, dims.qkv_row, 0, T);
  CopyTileAsync<D>(sv, v_head, dims.qkv_row, 0, T);
  mma::CommitCopies();

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t stats = (b * dims.heads + h) * T;
  // delta of the warp's 16 rows (a warp sum each, while the copies run), written for the dK/dV
  // kernel; each lane keeps those of its two fragment rows.
  float row_delta[2] = {0.0f, 0.0f};
  for (int rr = 0; rr < kFlashWarpRows; ++rr) {
    const int64_t t = q0 + warp * kFlashWarpRows + rr;
    float sum = 0.0f;
    if (t < T) {
      for (int d = lane; d < D; d += kWarpSize) {
        const int64_t at = head_out + t * dims.out_row + d;
        sum += __bfloat162float(dout[at]) * __bfloat162float(out[at]);
      }
    }
    sum = WarpSum(sum);
    if (t < T && lane == 0) delta[stats + t] = sum;
    if (rr == mma::Group(lane)) row_delta[0] = sum;
    if (rr == mma::Group(lane) + 8) row_delta[1] = sum;
  }
  int64_t row[2];
  float row_lse[2];  // base 2
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row[r] = q0 + warp * kFlashWarpRows + mma::Group(lane) + 8 * r;
    row_lse[r] = row[r] < T ? lse[stats + row[r]] * kLog2e : 0.0f;
  }

  FragA q[kChunks], dy[kChunks];
  FragC dq[kCols];
#pragma unroll
  for (int c = 0; c < kCols; ++c) mma::Zero(dq[c]);

  for (int kt = 0; kt < tiles; ++kt) {
    const int buf = kt & 1;
    StreamKeyValueTile<D>(sk, sv, k_head, v_head, dims.qkv_row, kt, tiles, T);
    if (kt == 0) {
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        mma::LoadA(q[c], sq + warp * kFlashWarpRows * kLd + c * mma::kK, kLd, lane);
        mma::LoadA(dy[c], sdo + warp * kFlashWarpRows * kLd + c * mma::kK, kLd, lane);
      }
    }
    const bf16* kb = sk + buf * kTile;
    const bf16* vb = sv + buf * kTile;
    const int64_t k0 = static_cast<int64_t>(kt) * kFlashRows;
    const int slices = kt + 1 == tiles ? 2 * warp + 2 : kFlashSlices;

    // s = q k^T becomes P, then dS; dp = dout v^T.
    FragC s[kFlashSlices], dp[kFlashSlices];
    SliceProducts<D>(s, q, kb, 0, slices, lane);
    SliceProducts<D>(dp, dy, vb, 0, slices, lane);
#pragma unroll
    for (int j = 0; j < kFlashSlices; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = i >> 1;
        const int64_t key = k0 + j * mma::kN + mma::CCol(lane, i);
        const float p = j < slices && key <= row[r] ? Exp2(s[j].v[i] * prm.scale_log2 - row_lse[r]) : 0.0f;
        s[j].v[i] = p * (dp[j].v[i] - row_delta[r]);
      }
    }
    // dq += dS k, 16 keys at a time.
    AccumulateProducts<D>(dq, s, kb, 0, slices, lane);
    __syncthreads();
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (row[r] >= T) continue;
    bf16* dst = dqkv + (b * T + row[r]) * dims.qkv_row + static_cast<int64_t>(h) * D + 2 * mma::Quad(lane);
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      StorePair<kAccumulate>(dst + c * mma::kN, dq[c].v[2 * r] * prm.scale, dq[c].v[2 * r + 1] * prm.scale);
    }
  }
}

// ---- dK / dV ----

// Shared memory: two query tiles, two dout tiles, and per tile 64 lse (base 2) and 64 delta.
template <int D>
constexpr size_t DkvSmemBytes() {
  return 4 * FlashTile<D>::kBytes + 2 * 2 * kFlashRows * sizeof(float);
}

// One unit of a dK/dV block's work: query tile `tile` of query head `h`.
struct QueryTile {
  int h;
  int64_t q0;
};

// Starts the copies of a unit's queries and dout, and stores its lse (base 2; +inf past the end,
// so P = 0 there) and delta.
template <int D>
__device__ __forceinline__ void LoadQueryTile(bf16* sq, bf16* sdo, float* slse, float* sdelta, QueryTile u,
                                              const bf16* qkv_rows, const bf16* dout, const float* lse,
                                              const float* delta, int64_t b, const AttnDims& dims) {
  const int64_t T = dims.seq_len;
  CopyTileAsync<D>(sq, qkv_rows + static_cast<int64_t>(u.h) * D, dims.qkv_row, u.q0, T);
  CopyTileAsync<D>(sdo, dout + b * T * dims.out_row + static_cast<int64_t>(u.h) * D, dims.out_row, u.q0, T);
  mma::CommitCopies();
  const int64_t stats = (b * dims.heads + u.h) * T;
  for (int x = threadIdx.x; x < kFlashRows; x += kFlashThreads) {
    const int64_t t = u.q0 + x;
    slse[x] = t < T ? lse[stats + t] * kLog2e : INFINITY;
    sdelta[x] = t < T ? delta[stats + t] : 0.0f;
  }
}

template <int D, bool kAccumulate>
__global__ void __launch_bounds__(kFlashThreads)
    FlashDkvKernel(bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse, const float* delta, Params prm) {
  constexpr int kLd = FlashTile<D>::kLd, kTile = FlashTile<D>::kElems;
  constexpr int kChunks = D / mma::kK, kCols = D / mma::kN;
  bf16* sq = reinterpret_cast<bf16*>(mma::SharedMemory());
  bf16* sdo = sq + 2 * kTile;
  float* slse = reinterpret_cast<float*>(sdo + 2 * kTile);
  float* sdelta = slse + 2 * kFlashRows;

  const AttnDims& dims = prm.dims;
  const int64_t k0 = static_cast<int64_t>(blockIdx.x) * kFlashRows;  // the first blocks have the most queries
  const int g = blockIdx.y;
  const int64_t b = blockIdx.z;
  const int group = dims.heads / dims.kv_heads;
  const int64_t T = dims.seq_len;
  const bf16* rows = qkv + b * T * dims.qkv_row;
  const int64_t k_col = static_cast<int64_t>(dims.heads + g) * D;
  const int64_t v_col = static_cast<int64_t>(dims.heads + dims.kv_heads + g) * D;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;

  // The block's keys and values, through the first query buffers, into A fragments.
  FragA kf[kChunks], vf[kChunks];
  CopyTileAsync<D>(sq, rows + k_col, dims.qkv_row, k0, T);
  CopyTileAsync<D>(sdo, rows + v_col, dims.qkv_row, k0, T);
  mma::CommitCopies();
  mma::WaitCopies<0>();
  __syncthreads();
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    mma::LoadA(kf[c], sq + warp * kFlashWarpRows * kLd + c * mma::kK, kLd, lane);
    mma::LoadA(vf[c], sdo + warp * kFlashWarpRows * kLd + c * mma::kK, kLd, lane);
  }
  __syncthreads();

  // Units: every query head of the group (ascending), each with its query tiles from the
  // diagonal one (q0 = k0) to the last.
  const int first_tile = static_cast<int>(k0 / kFlashRows);
  const int tiles = static_cast<int>(CeilDiv(T, kFlashRows)) - first_tile;
  const int units = group * tiles;
  const auto unit = [&](int n) {
    return QueryTile{g * group + n / tiles, static_cast<int64_t>(first_tile + n % tiles) * kFlashRows};
  };
  LoadQueryTile<D>(sq, sdo, slse, sdelta, unit(0), rows, dout, lse, delta, b, dims);

  int64_t key[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) key[r] = k0 + warp * kFlashWarpRows + mma::Group(lane) + 8 * r;
  FragC dk[kCols], dv[kCols];
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    mma::Zero(dk[c]);
    mma::Zero(dv[c]);
  }

  for (int n = 0; n < units; ++n) {
    const int buf = n & 1;
    if (n + 1 < units) {
      LoadQueryTile<D>(sq + (buf ^ 1) * kTile, sdo + (buf ^ 1) * kTile, slse + (buf ^ 1) * kFlashRows,
                       sdelta + (buf ^ 1) * kFlashRows, unit(n + 1), rows, dout, lse, delta, b, dims);
      mma::WaitCopies<1>();
    } else {
      mma::WaitCopies<0>();
    }
    __syncthreads();
    const bf16* qb = sq + buf * kTile;
    const bf16* dob = sdo + buf * kTile;
    const float* tl = slse + buf * kFlashRows;
    const float* td = sdelta + buf * kFlashRows;
    const int64_t q0 = unit(n).q0;
    // On the diagonal tile the warp's keys k0 + 16 warp.. see only queries from there on: the
    // 8-query slices before it are masked.
    const int first = q0 == k0 ? 2 * warp : 0;

    // st = k q^T becomes P^T, then dS^T; dpt = v dout^T.
    FragC st[kFlashSlices], dpt[kFlashSlices];
    SliceProducts<D>(st, kf, qb, first, kFlashSlices, lane);
    SliceProducts<D>(dpt, vf, dob, first, kFlashSlices, lane);
#pragma unroll
    for (int j = 0; j < kFlashSlices; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int x = j * mma::kN + mma::CCol(lane, i);  // query within the tile
        st[j].v[i] = j >= first && key[i >> 1] <= q0 + x ? Exp2(st[j].v[i] * prm.scale_log2 - tl[x]) : 0.0f;
      }
    }
    // dv += P^T dout, 16 queries at a time.
    AccumulateProducts<D>(dv, st, dob, first, kFlashSlices, lane);
#pragma unroll
    for (int j = 0; j < kFlashSlices; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) st[j].v[i] *= dpt[j].v[i] - td[j * mma::kN + mma::CCol(lane, i)];
    }
    // dk += dS^T q.
    AccumulateProducts<D>(dk, st, qb, first, kFlashSlices, lane);
    __syncthreads();
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (key[r] >= T) continue;
    bf16* at = dqkv + (b * T + key[r]) * dims.qkv_row + 2 * mma::Quad(lane);
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      StorePair<kAccumulate>(at + k_col + c * mma::kN, dk[c].v[2 * r] * prm.scale, dk[c].v[2 * r + 1] * prm.scale);
      StorePair<kAccumulate>(at + v_col + c * mma::kN, dv[c].v[2 * r], dv[c].v[2 * r + 1]);
    }
  }
}

}  // namespace gradsync::kernels::cuda::internal

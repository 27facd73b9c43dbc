// Attention backward pass (math and tiling in attention.cuh): delta, then dQ, then dK/dV.
#include "attention_common.cuh"
#include "gradsync/kernels/cuda/attention.cuh"

namespace gradsync::kernels::cuda {
namespace {

using internal::AttnDims;
using internal::bf16;
using internal::CeilDiv;
using internal::Dot;
using internal::FromFloat;
using internal::kAttnBlockRows;
using internal::kAttnRowsPerWarp;
using internal::kAttnThreads;
using internal::kAttnTile;
using internal::kFullMask;
using internal::kLog2e;
using internal::kWarpSize;
using internal::LoadTile;
using internal::ToFloat;

template <typename T>
__device__ __forceinline__ void AddInto(T* dst, float value) {
  *dst = FromFloat<T>(ToFloat(*dst) + value);
}

// delta[b, h, t] = dout[b, t, h] . out[b, t, h]: a warp per (b, t, h).
template <typename T>
__global__ void __launch_bounds__(kAttnThreads)
    AttentionDeltaKernel(float* delta, const T* dout, const T* out, AttnDims dims, int64_t rows, int head_dim) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t w = static_cast<int64_t>(blockIdx.x) * internal::kAttnWarps + threadIdx.x / kWarpSize;
  if (w >= rows) return;
  const int h = static_cast<int>(w % dims.heads);
  const int64_t bt = w / dims.heads;
  const int64_t off = bt * dims.out_row + static_cast<int64_t>(h) * head_dim;
  float s = 0.0f;
  for (int d = lane; d < head_dim; d += kWarpSize) s += ToFloat(dout[off + d]) * ToFloat(out[off + d]);
  s = internal::WarpSum(s);
  if (lane == 0) {
    const int64_t b = bt / dims.seq_len, t = bt - b * dims.seq_len;
    delta[(b * dims.heads + h) * dims.seq_len + t] = s;
  }
}

// dQ: the block owns 64 query rows of (b, h) (queries and their dout in shared memory) and streams
// key and value tiles [32][D + 1] (padded: lane j reads row j). Lane j scores key j.
template <int D>
constexpr size_t DqSmemFloats() {
  return 2 * kAttnBlockRows * D + 2 * kAttnTile * (D + 1);
}

template <typename T, int D>
__global__ void __launch_bounds__(kAttnThreads)
    AttentionDqKernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* delta, AttnDims dims,
                      float scale_log2, float scale) {
  float* smem = internal::DynamicShared<float>();
  float* sq = smem;
  float* sdo = sq + kAttnBlockRows * D;
  float* sk = sdo + kAttnBlockRows * D;
  float* sv = sk + kAttnTile * (D + 1);
  constexpr int kCols = D / kWarpSize;

  const int64_t q0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kAttnBlockRows;
  const int h = blockIdx.y;
  const int64_t b = blockIdx.z;
  const int g = h / (dims.heads / dims.kv_heads);
  const int64_t seq_len = dims.seq_len;
  const T* rows = qkv + b * seq_len * dims.qkv_row;
  const T* k_head = rows + static_cast<int64_t>(dims.heads + g) * D;
  const T* v_head = rows + static_cast<int64_t>(dims.heads + dims.kv_heads + g) * D;
  LoadTile<D>(sq, D, rows + static_cast<int64_t>(h) * D, dims.qkv_row, q0, kAttnBlockRows, seq_len);
  LoadTile<D>(sdo, D, dout + b * seq_len * dims.out_row + static_cast<int64_t>(h) * D, dims.out_row, q0, kAttnBlockRows,
              seq_len);

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t stats = (b * dims.heads + h) * seq_len;
  float lse2[kAttnRowsPerWarp], dl[kAttnRowsPerWarp], dq[kAttnRowsPerWarp][kCols];
#pragma unroll
  for (int rr = 0; rr < kAttnRowsPerWarp; ++rr) {
    const int64_t i = q0 + warp * kAttnRowsPerWarp + rr;
    lse2[rr] = i < seq_len ? lse[stats + i] * kLog2e : 0.0f;
    dl[rr] = i < seq_len ? delta[stats + i] : 0.0f;
#pragma unroll
    for (int c = 0; c < kCols; ++c) dq[rr][c] = 0.0f;
  }

  const int64_t q_end = min(q0 + kAttnBlockRows, seq_len);
  for (int64_t k0 = 0; k0 < q_end; k0 += kAttnTile) {
    __syncthreads();
    LoadTile<D>(sk, D + 1, k_head, dims.qkv_row, k0, kAttnTile, seq_len);
    LoadTile<D>(sv, D + 1, v_head, dims.qkv_row, k0, kAttnTile, seq_len);
    __syncthreads();
    const int64_t key = k0 + lane;
#pragma unroll
    for (int rr = 0; rr < kAttnRowsPerWarp; ++rr) {
      const int r = warp * kAttnRowsPerWarp + rr;
      const int64_t i = q0 + r;
      if (i >= seq_len || k0 > i) continue;  // warp-uniform
      const float s = Dot<D>(sq + r * D, sk + lane * (D + 1));
      const float dp = Dot<D>(sdo + r * D, sv + lane * (D + 1));
      const float p = key <= i ? exp2f(s * scale_log2 - lse2[rr]) : 0.0f;
      const float ds = p * (dp - dl[rr]);
#pragma unroll 8
      for (int j = 0; j < kAttnTile; ++j) {
        const float dsj = __shfl_sync(kFullMask, ds, j);
#pragma unroll
        for (int c = 0; c < kCols; ++c) dq[rr][c] += dsj * sk[j * (D + 1) + lane + c * kWarpSize];
      }
    }
  }

#pragma unroll
  for (int rr = 0; rr < kAttnRowsPerWarp; ++rr) {
    const int64_t i = q0 + warp * kAttnRowsPerWarp + rr;
    if (i >= seq_len) continue;
    T* dst = dqkv + (b * seq_len + i) * dims.qkv_row + static_cast<int64_t>(h) * D;
#pragma unroll
    for (int c = 0; c < kCols; ++c) AddInto(dst + lane + c * kWarpSize, dq[rr][c] * scale);
  }
}

// dK/dV: the block owns 64 keys of kv head g (keys and values in shared memory, read by
// broadcast) and streams query tiles [32][D + 1] of every query head in the group, with their dout
// rows, lse and delta. Lane i scores query i of the tile.
template <int D>
constexpr size_t DkvSmemFloats() {
  return 2 * kAttnBlockRows * D + 2 * kAttnTile * (D + 1) + 2 * kAttnTile;
}

template <typename T, int D>
__global__ void __launch_bounds__(kAttnThreads)
    AttentionDkvKernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* delta, AttnDims dims,
                       float scale_log2, float scale) {
  float* smem = internal::DynamicShared<float>();
  float* sk = smem;
  float* sv = sk + kAttnBlockRows * D;
  float* sq = sv + kAttnBlockRows * D;
  float* sdo = sq + kAttnTile * (D + 1);
  float* slse = sdo + kAttnTile * (D + 1);
  float* sdelta = slse + kAttnTile;
  constexpr int kCols = D / kWarpSize;

  // The first key blocks are seen by the most queries: blockIdx.x 0 starts first.
  const int64_t k0 = static_cast<int64_t>(blockIdx.x) * kAttnBlockRows;
  const int g = blockIdx.y;
  const int64_t b = blockIdx.z;
  const int group = dims.heads / dims.kv_heads;
  const int64_t seq_len = dims.seq_len;
  const T* rows = qkv + b * seq_len * dims.qkv_row;
  const T* dout_rows = dout + b * seq_len * dims.out_row;
  LoadTile<D>(sk, D, rows + static_cast<int64_t>(dims.heads + g) * D, dims.qkv_row, k0, kAttnBlockRows, seq_len);
  LoadTile<D>(sv, D, rows + static_cast<int64_t>(dims.heads + dims.kv_heads + g) * D, dims.qkv_row, k0, kAttnBlockRows,
              seq_len);

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  float dk[kAttnRowsPerWarp][kCols], dv[kAttnRowsPerWarp][kCols];
#pragma unroll
  for (int rr = 0; rr < kAttnRowsPerWarp; ++rr) {
#pragma unroll
    for (int c = 0; c < kCols; ++c) dk[rr][c] = dv[rr][c] = 0.0f;
  }

  for (int hh = 0; hh < group; ++hh) {
    const int h = g * group + hh;
    const int64_t stats = (b * dims.heads + h) * seq_len;
    // Queries before k0 see none of these keys; k0 is a multiple of the tile.
    for (int64_t i0 = k0; i0 < seq_len; i0 += kAttnTile) {
      __syncthreads();
      LoadTile<D>(sq, D + 1, rows + static_cast<int64_t>(h) * D, dims.qkv_row, i0, kAttnTile, seq_len);
      LoadTile<D>(sdo, D + 1, dout_rows + static_cast<int64_t>(h) * D, dims.out_row, i0, kAttnTile, seq_len);
      if (threadIdx.x < kAttnTile) {
        const int64_t i = i0 + threadIdx.x;
        slse[threadIdx.x] = i < seq_len ? lse[stats + i] * kLog2e : 0.0f;
        sdelta[threadIdx.x] = i < seq_len ? delta[stats + i] : 0.0f;
      }
      __syncthreads();
      const int64_t query = i0 + lane;
      const bool query_exists = query < seq_len;
#pragma unroll
      for (int rr = 0; rr < kAttnRowsPerWarp; ++rr) {
        const int r = warp * kAttnRowsPerWarp + rr;
        const int64_t j = k0 + r;
        // Warp-uniform: keys past the end, and tiles whose queries all precede key j.
        if (j >= seq_len || i0 + kAttnTile - 1 < j) continue;
        const float s = Dot<D>(sk + r * D, sq + lane * (D + 1));
        const float dp = Dot<D>(sv + r * D, sdo + lane * (D + 1));
        const bool attends = query_exists && query >= j;
        const float p = attends ? exp2f(s * scale_log2 - slse[lane]) : 0.0f;
        const float ds = p * (dp - sdelta[lane]);
#pragma unroll 8
        for (int q = 0; q < kAttnTile; ++q) {
          const float pq = __shfl_sync(kFullMask, p, q);
          const float dsq = __shfl_sync(kFullMask, ds, q);
#pragma unroll
          for (int c = 0; c < kCols; ++c) {
            const int col = q * (D + 1) + lane + c * kWarpSize;
            dv[rr][c] += pq * sdo[col];
            dk[rr][c] += dsq * sq[col];
          }
        }
      }
    }
  }

#pragma unroll
  for (int rr = 0; rr < kAttnRowsPerWarp; ++rr) {
    const int64_t j = k0 + warp * kAttnRowsPerWarp + rr;
    if (j >= seq_len) continue;
    T* row = dqkv + (b * seq_len + j) * dims.qkv_row;
    T* dk_dst = row + static_cast<int64_t>(dims.heads + g) * D;
    T* dv_dst = row + static_cast<int64_t>(dims.heads + dims.kv_heads + g) * D;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      AddInto(dk_dst + lane + c * kWarpSize, dk[rr][c] * scale);
      AddInto(dv_dst + lane + c * kWarpSize, dv[rr][c]);
    }
  }
}

template <typename T, int D>
absl::Status LaunchBackward(T* dqkv, const float* delta, const T* dout, const T* qkv, const float* lse,
                            const AttentionShape& shape, cudaStream_t stream) {
  const AttnDims dims = internal::DimsOf(shape);
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  const float scale_log2 = internal::kLog2e * scale;
  const unsigned blocks = static_cast<unsigned>(CeilDiv(shape.seq_len, kAttnBlockRows));

  constexpr size_t kDqSmem = DqSmemFloats<D>() * sizeof(float);
  auto dq_kernel = AttentionDqKernel<T, D>;
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::AllowSharedMemory(dq_kernel, kDqSmem, "AttentionDqKernel"));
  internal::LaunchKernel(dq_kernel,
                         dim3(blocks, static_cast<unsigned>(shape.heads), static_cast<unsigned>(shape.batch)),
                         kAttnThreads, kDqSmem, stream, dqkv, dout, qkv, lse, delta, dims, scale_log2, scale);
  GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("AttentionDqKernel"));

  constexpr size_t kDkvSmem = DkvSmemFloats<D>() * sizeof(float);
  auto dkv_kernel = AttentionDkvKernel<T, D>;
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::AllowSharedMemory(dkv_kernel, kDkvSmem, "AttentionDkvKernel"));
  internal::LaunchKernel(dkv_kernel,
                         dim3(blocks, static_cast<unsigned>(shape.kv_heads), static_cast<unsigned>(shape.batch)),
                         kAttnThreads, kDkvSmem, stream, dqkv, dout, qkv, lse, delta, dims, scale_log2, scale);
  return LaunchStatus("AttentionDkvKernel");
}

}  // namespace

template <typename T>
absl::Status AttentionBackward(T* dqkv, float* delta, const T* dout, const T* qkv, const T* out, const float* lse,
                               const AttentionShape& shape, cudaStream_t stream) {
  constexpr const char* kFn = "AttentionBackward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::CheckAttention(kFn, shape));
  if (shape.batch == 0 || shape.seq_len == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dqkv", dqkv));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "delta", delta));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dout", dout));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "qkv", qkv));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "out", out));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "lse", lse));

  const int64_t rows = shape.batch * shape.seq_len * shape.heads;
  internal::LaunchKernel(AttentionDeltaKernel<T>, static_cast<unsigned>(CeilDiv(rows, internal::kAttnWarps)),
                         kAttnThreads, 0, stream, delta, dout, out, internal::DimsOf(shape), rows,
                         static_cast<int>(shape.head_dim));
  GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("AttentionDeltaKernel"));
  switch (shape.head_dim) {
    case 32: return LaunchBackward<T, 32>(dqkv, delta, dout, qkv, lse, shape, stream);
    case 64: return LaunchBackward<T, 64>(dqkv, delta, dout, qkv, lse, shape, stream);
    default: return LaunchBackward<T, 128>(dqkv, delta, dout, qkv, lse, shape, stream);
  }
}

template absl::Status AttentionBackward<float>(float*, float*, const float*, const float*, const float*, const float*,
                                               const AttentionShape&, cudaStream_t);
template absl::Status AttentionBackward<bf16>(bf16*, float*, const bf16*, const bf16*, const bf16*, const float*,
                                              const AttentionShape&, cudaStream_t);

}  // namespace gradsync::kernels::cuda

// Deterministic column sums over the rows of a [rows, cols] matrix, for the parameter gradients
// that sum over every token: dbias of a linear layer, dweight and dbias of the norms.
//
//   out_k[c] += sum_r f_k(r, c)          for k < K (K outputs at once: dweight and dbias)
//
// Pass 1 gives each block 32 columns (one per lane, so a warp reads 32 consecutive elements of a
// row) and one chunk of rows; its 8 warps take every 8th row of the chunk, then the 8 partial sums
// of a column are added in warp order. With one chunk the block adds straight into out; with more,
// pass 1 writes partial[chunk][k][c] and pass 2 adds the chunks in chunk order. No atomics: the
// order of every addition depends only on (rows, cols, K, scratch size), so the result is
// bitwise reproducible. Private to kernels/cuda.
#pragma once

#include <algorithm>
#include <cstdint>

#include "common.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda::internal {

inline constexpr int kReduceCols = 32;     // columns per block (one per lane)
inline constexpr int kReduceRowLanes = 8;  // warps per block, each taking every 8th row
inline constexpr int kReduceThreads = kReduceCols * kReduceRowLanes;
// Enough blocks in flight to cover an H100 (132 SMs) several times over.
inline constexpr int64_t kReduceTargetBlocks = 1024;
// A chunk shorter than this spends more on its partial than on its rows.
inline constexpr int64_t kReduceMinRowsPerChunk = 32;

struct ColumnReducePlan {
  int64_t chunks = 1;
  int64_t rows_per_chunk = 0;
};

// Chunks as many as fill the GPU, no more than `scratch_floats` partials allow (K * cols floats per
// chunk); a single chunk needs no scratch at all.
inline ColumnReducePlan PlanColumnReduce(int64_t rows, int64_t cols, int k, int64_t scratch_floats) {
  const int64_t col_blocks = std::max<int64_t>(1, CeilDiv(cols, kReduceCols));
  int64_t chunks = std::max<int64_t>(1, kReduceTargetBlocks / col_blocks);
  chunks = std::min(chunks, std::max<int64_t>(1, rows / kReduceMinRowsPerChunk));
  const int64_t per_chunk = static_cast<int64_t>(k) * cols;
  if (per_chunk > 0) chunks = std::min(chunks, std::max<int64_t>(1, scratch_floats / per_chunk));
  ColumnReducePlan plan;
  plan.rows_per_chunk = std::max<int64_t>(1, CeilDiv(rows, chunks));
  plan.chunks = std::max<int64_t>(1, CeilDiv(rows, plan.rows_per_chunk));
  return plan;
}

// The scratch (in floats) that lets PlanColumnReduce choose its full chunk count.
inline int64_t ColumnReduceScratchFloats(int64_t rows, int64_t cols, int k) {
  const ColumnReducePlan plan = PlanColumnReduce(rows, cols, k, INT64_MAX);
  return plan.chunks > 1 ? plan.chunks * k * cols : 0;
}

template <typename T, int K>
struct ColumnOutputs {
  T* out[K];  // a null output is skipped
};

template <typename T>
__device__ __forceinline__ void AddInto(T* dst, float value) {
  *dst = FromFloat<T>(ToFloat(*dst) + value);
}

// Fn: __device__ void operator()(int64_t row, int64_t col, float (&acc)[K]) adding f_k into acc[k].
template <int K, typename T, typename Fn>
__global__ void __launch_bounds__(kReduceThreads)
    ColumnReducePartialKernel(Fn fn, int64_t rows, int64_t cols, int64_t rows_per_chunk, float* partial,
                              ColumnOutputs<T, K> outputs) {
  const int lane = threadIdx.x % kReduceCols, row_lane = threadIdx.x / kReduceCols;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kReduceCols + lane;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t r1 = min(rows, r0 + rows_per_chunk);
  float acc[K];
#pragma unroll
  for (int k = 0; k < K; ++k) acc[k] = 0.0f;
  if (col < cols) {
    for (int64_t r = r0 + row_lane; r < r1; r += kReduceRowLanes) fn(r, col, acc);
  }
  __shared__ float sums[K][kReduceRowLanes][kReduceCols];
#pragma unroll
  for (int k = 0; k < K; ++k) sums[k][row_lane][lane] = acc[k];
  __syncthreads();
  if (row_lane != 0 || col >= cols) return;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kReduceRowLanes; ++j) s += sums[k][j][lane];
    if (gridDim.y == 1) {
      if (outputs.out[k] != nullptr) AddInto(outputs.out[k] + col, s);
    } else {
      partial[(static_cast<int64_t>(blockIdx.y) * K + k) * cols + col] = s;
    }
  }
}

template <int K, typename T>
__global__ void ColumnReduceFinishKernel(const float* partial, int64_t chunks, int64_t cols,
                                         ColumnOutputs<T, K> outputs) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= K * cols) return;
  const int k = static_cast<int>(idx / cols);
  const int64_t col = idx - k * cols;
  T* out = nullptr;
#pragma unroll
  for (int j = 0; j < K; ++j) {
    if (j == k) out = outputs.out[j];
  }
  if (out == nullptr) return;
  float s = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) s += partial[(c * K + k) * cols + col];
  AddInto(out + col, s);
}

// Launches the one or two passes on `stream`; returns the launch status naming `what`.
template <int K, typename T, typename Fn>
absl::Status LaunchColumnReduce(const char* what, Fn fn, int64_t rows, int64_t cols, float* scratch,
                                int64_t scratch_floats, ColumnOutputs<T, K> outputs, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return absl::OkStatus();
  const ColumnReducePlan plan = PlanColumnReduce(rows, cols, K, scratch == nullptr ? 0 : scratch_floats);
  const dim3 grid(static_cast<unsigned>(CeilDiv(cols, kReduceCols)), static_cast<unsigned>(plan.chunks));
  internal::LaunchKernel(ColumnReducePartialKernel<K, T, Fn>, grid, kReduceThreads, 0, stream, fn, rows, cols,
                         plan.rows_per_chunk, scratch, outputs);
  if (absl::Status s = LaunchStatus(absl::StrCat("ColumnReducePartialKernel (", what, ")")); !s.ok()) {
    return s;
  }
  if (plan.chunks == 1) return absl::OkStatus();
  constexpr int kThreads = 256;
  internal::LaunchKernel(ColumnReduceFinishKernel<K, T>, static_cast<unsigned>(CeilDiv(K * cols, kThreads)), kThreads,
                         0, stream, scratch, plan.chunks, cols, outputs);
  return LaunchStatus(absl::StrCat("ColumnReduceFinishKernel (", what, ")"));
}

}  // namespace gradsync::kernels::cuda::internal

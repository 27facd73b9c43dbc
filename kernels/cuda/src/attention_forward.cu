// Attention forward pass (math and tiling in attention.cuh).
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
using internal::kWarpSize;
using internal::LoadTile;

// Shared memory: the block's queries [64][D], then a key tile [32][D + 1] (padded: lane j reads
// row j, so an unpadded stride of D would put all 32 lanes on one bank) and a value tile [32][D]
// (lanes read consecutive columns).
template <int D>
constexpr size_t ForwardSmemFloats() {
  return kAttnBlockRows * D + kAttnTile * (D + 1) + kAttnTile * D;
}

template <typename T, int D>
__global__ void __launch_bounds__(kAttnThreads)
    AttentionForwardKernel(T* out, float* lse, const T* qkv, AttnDims dims, float scale_log2) {
  float* smem = internal::DynamicShared<float>();
  float* sq = smem;
  float* sk = sq + kAttnBlockRows * D;
  float* sv = sk + kAttnTile * (D + 1);
  constexpr int kCols = D / kWarpSize;  // output columns per lane: lane + 32 c

  // The last query blocks see the most keys: start them first so they do not form the tail.
  const int64_t q0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kAttnBlockRows;
  const int h = blockIdx.y;
  const int64_t b = blockIdx.z;
  const int g = h / (dims.heads / dims.kv_heads);
  const int64_t seq_len = dims.seq_len;
  const T* rows = qkv + b * seq_len * dims.qkv_row;
  const T* k_head = rows + static_cast<int64_t>(dims.heads + g) * D;
  const T* v_head = rows + static_cast<int64_t>(dims.heads + dims.kv_heads + g) * D;
  LoadTile<D>(sq, D, rows + static_cast<int64_t>(h) * D, dims.qkv_row, q0, kAttnBlockRows, seq_len);

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  float o[kAttnRowsPerWarp][kCols];
  float m[kAttnRowsPerWarp], l[kAttnRowsPerWarp];
#pragma unroll
  for (int rr = 0; rr < kAttnRowsPerWarp; ++rr) {
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
#pragma unroll
    for (int c = 0; c < kCols; ++c) o[rr][c] = 0.0f;
  }

  const int64_t q_end = min(q0 + kAttnBlockRows, seq_len);
  for (int64_t k0 = 0; k0 < q_end; k0 += kAttnTile) {
    __syncthreads();  // the previous tile is consumed (and, the first time, sq is complete)
    LoadTile<D>(sk, D + 1, k_head, dims.qkv_row, k0, kAttnTile, seq_len);
    LoadTile<D>(sv, D, v_head, dims.qkv_row, k0, kAttnTile, seq_len);
    __syncthreads();
    const int64_t key = k0 + lane;
#pragma unroll
    for (int rr = 0; rr < kAttnRowsPerWarp; ++rr) {
      const int r = warp * kAttnRowsPerWarp + rr;
      const int64_t i = q0 + r;
      // Warp-uniform: the whole warp skips rows past the end and tiles above the diagonal. A row
      // that goes on has key k0 <= i unmasked, so its running max is finite from here on.
      if (i >= seq_len || k0 > i) continue;
      float s = Dot<D>(sq + r * D, sk + lane * (D + 1));
      s = key <= i ? s * scale_log2 : -INFINITY;
      const float m_new = fmaxf(m[rr], internal::WarpMax(s));
      const float p = exp2f(s - m_new);
      const float correction = exp2f(m[rr] - m_new);  // 0 on the first tile (m = -inf)
      l[rr] = l[rr] * correction + internal::WarpSum(p);
      m[rr] = m_new;
#pragma unroll
      for (int c = 0; c < kCols; ++c) o[rr][c] *= correction;
#pragma unroll 8
      for (int j = 0; j < kAttnTile; ++j) {
        const float pj = __shfl_sync(kFullMask, p, j);
#pragma unroll
        for (int c = 0; c < kCols; ++c) o[rr][c] += pj * sv[j * D + lane + c * kWarpSize];
      }
    }
  }

#pragma unroll
  for (int rr = 0; rr < kAttnRowsPerWarp; ++rr) {
    const int64_t i = q0 + warp * kAttnRowsPerWarp + rr;
    if (i >= seq_len) continue;
    const float inv_l = 1.0f / l[rr];
    T* y = out + (b * seq_len + i) * dims.out_row + static_cast<int64_t>(h) * D;
#pragma unroll
    for (int c = 0; c < kCols; ++c) y[lane + c * kWarpSize] = FromFloat<T>(o[rr][c] * inv_l);
    if (lane == 0) {
      // m and l are in base 2: log(sum exp(S)) = ln 2 * (m + log2 l).
      lse[(b * dims.heads + h) * seq_len + i] = (m[rr] + log2f(l[rr])) * internal::kLn2;
    }
  }
}

template <typename T, int D>
absl::Status LaunchForward(T* out, float* lse, const T* qkv, const AttentionShape& shape, cudaStream_t stream) {
  constexpr size_t kSmem = ForwardSmemFloats<D>() * sizeof(float);
  auto kernel = AttentionForwardKernel<T, D>;
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::AllowSharedMemory(kernel, kSmem, "AttentionForwardKernel"));
  const float scale_log2 = internal::kLog2e / sqrtf(static_cast<float>(D));
  const dim3 grid(static_cast<unsigned>(CeilDiv(shape.seq_len, kAttnBlockRows)), static_cast<unsigned>(shape.heads),
                  static_cast<unsigned>(shape.batch));
  internal::LaunchKernel(kernel, grid, kAttnThreads, kSmem, stream, out, lse, qkv, internal::DimsOf(shape), scale_log2);
  return LaunchStatus("AttentionForwardKernel");
}

}  // namespace

template <typename T>
absl::Status AttentionForward(T* out, float* lse, const T* qkv, const AttentionShape& shape, cudaStream_t stream) {
  constexpr const char* kFn = "AttentionForward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::CheckAttention(kFn, shape));
  if (shape.batch == 0 || shape.seq_len == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "out", out));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "lse", lse));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "qkv", qkv));
  switch (shape.head_dim) {
    case 32: return LaunchForward<T, 32>(out, lse, qkv, shape, stream);
    case 64: return LaunchForward<T, 64>(out, lse, qkv, shape, stream);
    default: return LaunchForward<T, 128>(out, lse, qkv, shape, stream);
  }
}

template absl::Status AttentionForward<float>(float*, float*, const float*, const AttentionShape&, cudaStream_t);
template absl::Status AttentionForward<bf16>(bf16*, float*, const bf16*, const AttentionShape&, cudaStream_t);

}  // namespace gradsync::kernels::cuda

// Attention through batched cuBLASLt products (math in attention_gemm.cuh): the head split and
// merge, the causal softmax forward and backward kernels, and the order of the products.
#include "gradsync/kernels/cuda/attention_gemm.cuh"

#include "attention_common.cuh"
#include "common.cuh"
#include "gemm.cuh"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::CeilDiv;
using internal::Gemm;
using internal::kWarpSize;
using internal::RunGemm;

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / kWarpSize;  // softmax: one warp per row

// Scratch carved in 256-byte aligned pieces.
struct Scratch {
  bf16 *q, *k, *v, *o, *dq, *dk, *dv;
  float* scores;  // S forward, dP backward
  bf16* ds;
};

size_t Align(size_t bytes) { return (bytes + 255) / 256 * 256; }

size_t HeadsCount(const AttentionShape& s) { return static_cast<size_t>(s.batch * s.heads * s.seq_len * s.head_dim); }
size_t SquareCount(const AttentionShape& s) { return static_cast<size_t>(s.batch * s.heads * s.seq_len * s.seq_len); }

Scratch Carve(void* base, const AttentionShape& s) {
  auto* p = static_cast<unsigned char*>(base);
  const size_t heads = Align(HeadsCount(s) * sizeof(bf16));
  Scratch out;
  bf16** slots[] = {&out.q, &out.k, &out.v, &out.o, &out.dq, &out.dk, &out.dv};
  for (bf16** slot : slots) {
    *slot = reinterpret_cast<bf16*>(p);
    p += heads;
  }
  out.scores = reinterpret_cast<float*>(p);
  p += Align(SquareCount(s) * sizeof(float));
  out.ds = reinterpret_cast<bf16*>(p);
  return out;
}

// q, k, v [B, H, T, D] from rows [B, T, width] holding H query heads, then KVH key heads, then
// KVH value heads (qkv: width (H + 2 KVH) D); query head h reads kv head h / (H / KVH). `which`
// selects the outputs: 1 q, 2 k, 4 v (a [B, T, H D] tensor splits as q alone, width H D).
__global__ void SplitHeadsKernel(bf16* q, bf16* k, bf16* v, const bf16* rows, int64_t width, int64_t B, int64_t T,
                                 int64_t H, int64_t KVH, int64_t D, int which) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= B * H * T * D) return;
  const int64_t d = idx % D, t = (idx / D) % T, h = (idx / (D * T)) % H, b = idx / (D * T * H);
  const int64_t g = h / (H / KVH);
  const bf16* row = rows + (b * T + t) * width;
  if (which & 1) q[idx] = row[h * D + d];
  if (which & 2) k[idx] = row[(H + g) * D + d];
  if (which & 4) v[idx] = row[(H + KVH + g) * D + d];
}

// out [B, T, H D] from o [B, H, T, D].
__global__ void MergeHeadsKernel(bf16* out, const bf16* o, int64_t B, int64_t T, int64_t H, int64_t D) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= B * H * T * D) return;
  const int64_t d = idx % D, t = (idx / D) % T, h = (idx / (D * T)) % H, b = idx / (D * T * H);
  out[(b * T + t) * H * D + h * D + d] = o[idx];
}

// dqkv [B, T, (H + 2 KVH) D] += dq, and the dk and dv of each kv head summed over its query heads
// in ascending order (fp32, one rounding).
__global__ void AccumulateDqkvKernel(bf16* dqkv, const bf16* dq, const bf16* dk, const bf16* dv, int64_t B, int64_t T,
                                     int64_t H, int64_t KVH, int64_t D) {
  const int64_t width = (H + 2 * KVH) * D;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= B * T * width) return;
  const int64_t col = idx % width, bt = idx / width, b = bt / T, t = bt % T;
  const int64_t slot = col / D, d = col % D;
  auto at = [&](const bf16* x, int64_t h) { return internal::ToFloat(x[((b * H + h) * T + t) * D + d]); };
  float sum = 0.0f;
  if (slot < H) {
    sum = at(dq, slot);
  } else {
    const bool is_k = slot < H + KVH;
    const int64_t g = is_k ? slot - H : slot - H - KVH, group = H / KVH;
    for (int64_t h = g * group; h < (g + 1) * group; ++h) sum += at(is_k ? dk : dv, h);
  }
  dqkv[idx] = internal::FromFloat<bf16>(internal::ToFloat(dqkv[idx]) + sum);
}

// probs row i = causal softmax(scale scores row i): zeros right of the diagonal. One warp per row.
__global__ void CausalSoftmaxKernel(bf16* probs, const float* scores, int64_t rows, int64_t T, float scale) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= rows) return;
  const int64_t i = row % T;
  const float* s = scores + row * T;
  bf16* p = probs + row * T;
  float max = -INFINITY;
  for (int64_t j = lane; j <= i; j += kWarpSize) max = fmaxf(max, s[j] * scale);
  max = internal::WarpMax(max);
  float sum = 0.0f;
  for (int64_t j = lane; j <= i; j += kWarpSize) sum += expf(s[j] * scale - max);
  const float inv = 1.0f / internal::WarpSum(sum);
  for (int64_t j = lane; j < T; j += kWarpSize) {
    p[j] = internal::FromFloat<bf16>(j <= i ? expf(s[j] * scale - max) * inv : 0.0f);
  }
}

// ds row i = scale P (dP - sum_j P dP) on j <= i, zeros right of the diagonal. One warp per row.
__global__ void CausalSoftmaxBackwardKernel(bf16* ds, const bf16* probs, const float* dp, int64_t rows, int64_t T,
                                            float scale) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= rows) return;
  const int64_t i = row % T;
  const bf16* p = probs + row * T;
  const float* g = dp + row * T;
  float dot = 0.0f;
  for (int64_t j = lane; j <= i; j += kWarpSize) dot += internal::ToFloat(p[j]) * g[j];
  dot = internal::WarpSum(dot);
  bf16* out = ds + row * T;
  for (int64_t j = lane; j < T; j += kWarpSize) {
    out[j] = internal::FromFloat<bf16>(j <= i ? scale * internal::ToFloat(p[j]) * (g[j] - dot) : 0.0f);
  }
}

unsigned Blocks(int64_t n, int64_t per_block) { return static_cast<unsigned>(CeilDiv(n, per_block)); }

// `g` once per head, B H products in one call, operands `stride_*` elements apart, bf16 in.
absl::Status RunHeads(MatmulContext& ctx, Gemm g, const AttentionShape& s, int64_t stride_a, int64_t stride_b,
                      int64_t stride_d, cudaStream_t stream) {
  g.batch = s.batch * s.heads;
  g.stride_a = stride_a;
  g.stride_b = stride_b;
  g.stride_d = stride_d;
  return RunGemm(ctx, CUDA_R_16BF, g, stream);
}

// Row-major per head: C[T, T] = X[T, D] Y[T, D]^T (fp32), the scores and dP. Column-major, that is
// C^T = Y X^T: A = Y stored [D, T] transposed, B = X stored [D, T].
absl::Status SquareProduct(MatmulContext& ctx, const char* what, float* c, const bf16* x, const bf16* y,
                           const AttentionShape& s, cudaStream_t stream) {
  const int64_t T = s.seq_len, D = s.head_dim;
  Gemm g{what, T, T, D, y, true, D, x, false, D, c, T, 0.0f, nullptr};
  g.d_fp32 = true;
  return RunHeads(ctx, g, s, T * D, T * D, T * T, stream);
}

// Row-major per head: C[T, D] = P[T, T] Y[T, D] (transpose_p: P^T Y), bf16. Column-major,
// C^T = Y^T P^T: A = Y stored [D, T], B = P stored [T, T] (transposed for P^T Y).
absl::Status PanelProduct(MatmulContext& ctx, const char* what, bf16* c, const bf16* p, bool transpose_p,
                          const bf16* y, const AttentionShape& s, cudaStream_t stream) {
  const int64_t T = s.seq_len, D = s.head_dim;
  Gemm g{what, D, T, T, y, false, D, p, transpose_p, T, c, D, 0.0f, nullptr};
  return RunHeads(ctx, g, s, T * D, T * T, T * D, stream);
}

absl::Status Check(const char* fn, const AttentionShape& s, const void* scratch, size_t scratch_bytes,
                   std::initializer_list<std::pair<const char*, const void*>> buffers) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::CheckAttention(fn, s));
  for (const auto& [name, ptr] : buffers) GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(fn, name, ptr));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(fn, "scratch", scratch));
  if (scratch_bytes < AttentionGemmScratchBytes(s)) {
    return absl::InvalidArgumentError(absl::StrCat(fn, ": scratch of ", scratch_bytes, " bytes, needs ",
                                                   AttentionGemmScratchBytes(s)));
  }
  return absl::OkStatus();
}

float Scale(const AttentionShape& s) { return 1.0f / sqrtf(static_cast<float>(s.head_dim)); }

}  // namespace

size_t AttentionGemmProbsCount(const AttentionShape& shape) { return SquareCount(shape); }

size_t AttentionGemmScratchBytes(const AttentionShape& shape) {
  return 7 * Align(HeadsCount(shape) * sizeof(bf16)) + Align(SquareCount(shape) * sizeof(float)) +
         Align(SquareCount(shape) * sizeof(bf16));
}

absl::Status AttentionGemmForward(MatmulContext& ctx, bf16* out, bf16* probs, const bf16* qkv,
                                  const AttentionShape& s, void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  constexpr const char* kFn = "AttentionGemmForward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      Check(kFn, s, scratch, scratch_bytes, {{"out", out}, {"probs", probs}, {"qkv", qkv}}));
  if (s.batch == 0 || s.seq_len == 0) return absl::OkStatus();
  const Scratch w = Carve(scratch, s);
  const int64_t B = s.batch, T = s.seq_len, H = s.heads, D = s.head_dim, rows = B * H * T;
  SplitHeadsKernel<<<Blocks(B * H * T * D, kThreads), kThreads, 0, stream>>>(w.q, w.k, w.v, qkv, s.qkv_width(), B, T,
                                                                            H, s.kv_heads, D, 7);
  GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("SplitHeadsKernel"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(SquareProduct(ctx, "attention scores q k^T", w.scores, w.q, w.k, s, stream));
  CausalSoftmaxKernel<<<Blocks(rows, kRowsPerBlock), kThreads, 0, stream>>>(probs, w.scores, rows, T, Scale(s));
  GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("CausalSoftmaxKernel"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(PanelProduct(ctx, "attention output P v", w.o, probs, false, w.v, s, stream));
  MergeHeadsKernel<<<Blocks(B * H * T * D, kThreads), kThreads, 0, stream>>>(out, w.o, B, T, H, D);
  return LaunchStatus("MergeHeadsKernel");
}

absl::Status AttentionGemmBackward(MatmulContext& ctx, bf16* dqkv, const bf16* dout, const bf16* qkv,
                                   const bf16* probs, const AttentionShape& s, void* scratch, size_t scratch_bytes,
                                   cudaStream_t stream) {
  constexpr const char* kFn = "AttentionGemmBackward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(Check(kFn, s, scratch, scratch_bytes,
                                      {{"dqkv", dqkv}, {"dout", dout}, {"qkv", qkv}, {"probs", probs}}));
  if (s.batch == 0 || s.seq_len == 0) return absl::OkStatus();
  const Scratch w = Carve(scratch, s);
  const int64_t B = s.batch, T = s.seq_len, H = s.heads, KVH = s.kv_heads, D = s.head_dim, rows = B * H * T;
  const unsigned head_blocks = Blocks(B * H * T * D, kThreads);
  SplitHeadsKernel<<<head_blocks, kThreads, 0, stream>>>(w.q, w.k, w.v, qkv, s.qkv_width(), B, T, H, KVH, D, 7);
  GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("SplitHeadsKernel"));
  // dout [B, T, H D] splits like the query heads of a qkv row.
  SplitHeadsKernel<<<head_blocks, kThreads, 0, stream>>>(w.o, nullptr, nullptr, dout, s.out_width(), B, T, H, KVH, D,
                                                         1);
  GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("SplitHeadsKernel"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(SquareProduct(ctx, "attention dP = do v^T", w.scores, w.o, w.v, s, stream));
  GRADSYNC_CUDA_RETURN_IF_ERROR(PanelProduct(ctx, "attention dv = P^T do", w.dv, probs, true, w.o, s, stream));
  CausalSoftmaxBackwardKernel<<<Blocks(rows, kRowsPerBlock), kThreads, 0, stream>>>(w.ds, probs, w.scores, rows, T,
                                                                                    Scale(s));
  GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("CausalSoftmaxBackwardKernel"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(PanelProduct(ctx, "attention dq = dS k", w.dq, w.ds, false, w.k, s, stream));
  GRADSYNC_CUDA_RETURN_IF_ERROR(PanelProduct(ctx, "attention dk = dS^T q", w.dk, w.ds, true, w.q, s, stream));
  AccumulateDqkvKernel<<<Blocks(B * T * (H + 2 * KVH) * D, kThreads), kThreads, 0, stream>>>(dqkv, w.dq, w.dk, w.dv,
                                                                                              B, T, H, KVH, D);
  return LaunchStatus("AccumulateDqkvKernel");
}

}  // namespace gradsync::kernels::cuda

// Attention through batched cuBLASLt products (math in attention_gemm.cuh): the head split and
// merge, the causal softmax forward and backward kernels, and the order of the products.
#include "gradsync/kernels/cuda/attention_gemm.cuh"

#include "attention_common.cuh"
#include "common.cuh"
#include "gemm_engine.cuh"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::CeilDiv;
using internal::Gemm;
using internal::kWarpSize;
using internal::RunGemm;

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / kWarpSize;  // softmax: one warp per row

// Scratch carved in 256-byte aligned pieces: the scores / dP (fp32) and dS (bf16), [B, H, T, T],
// and with grouped queries the dk and dv sums [B, T, 2 KVH D] (fp32).
struct Scratch {
  float* scores;
  bf16* ds;
  float* dkv;
};

size_t Align(size_t bytes) { return (bytes + 255) / 256 * 256; }

size_t SquareCount(const AttentionShape& s) { return static_cast<size_t>(s.batch * s.heads * s.seq_len * s.seq_len); }
size_t KvCount(const AttentionShape& s) {
  return s.heads == s.kv_heads ? 0 : static_cast<size_t>(s.batch * s.seq_len * 2 * s.kv_heads * s.head_dim);
}

Scratch Carve(void* base, const AttentionShape& s) {
  auto* p = static_cast<unsigned char*>(base);
  Scratch out;
  out.scores = reinterpret_cast<float*>(p);
  p += Align(SquareCount(s) * sizeof(float));
  out.ds = reinterpret_cast<bf16*>(p);
  p += Align(SquareCount(s) * sizeof(bf16));
  out.dkv = reinterpret_cast<float*>(p);
  return out;
}

// dqkv's k and v columns [B, T, H D + (0..2 KVH D)] += dkv [B, T, 2 KVH D]: one rounding of each
// kv head's sum over its query heads.
__global__ void AddKvKernel(bf16* dqkv, const float* dkv, int64_t rows, int64_t q_width, int64_t kv_width) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * kv_width) return;
  bf16* out = dqkv + idx / kv_width * (q_width + kv_width) + q_width + idx % kv_width;
  *out = internal::FromFloat<bf16>(internal::ToFloat(*out) + dkv[idx]);
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

// The products read the heads where they lie, in the [B, T, width] rows of qkv, out and dqkv, so
// no kernel gathers heads into [B, H, T, D] and back. One call covers one sequence b and one
// residue r of the query heads within their group (group = H / KVH): the KVH heads
// h = g group + r, g = 0..KVH-1, whose query slices lie group D apart and whose kv slices D apart.
// GPT-2 (KVH = H) takes B calls per product, each over all H heads.
struct Panel {
  const void* ptr;  // head g = 0 of the call, row t = 0
  int64_t ld;       // elements between rows t and t + 1
  int64_t stride;   // elements between heads g and g + 1
};

struct Heads {
  const AttentionShape& s;
  int64_t b, r;  // r is also the call's first query head (g = 0)
  int64_t group() const { return s.heads / s.kv_heads; }
  // Query head slices of a [B, T, width] tensor whose query heads start at column 0.
  Panel Query(const bf16* rows, int64_t width) const {
    return {rows + b * s.seq_len * width + r * s.head_dim, width, group() * s.head_dim};
  }
  // Key (slot 0) or value (slot 1) slices of a qkv-shaped tensor.
  Panel KeyValue(const bf16* rows, int slot) const {
    const int64_t width = s.qkv_width();
    return {rows + b * s.seq_len * width + (s.heads + slot * s.kv_heads) * s.head_dim, width, s.head_dim};
  }
  // The [T, T] squares (probs, scores, dS) of the call's heads.
  int64_t SquareOffset() const { return (b * s.heads + r) * s.seq_len * s.seq_len; }
  int64_t SquareStride() const { return group() * s.seq_len * s.seq_len; }
};

// Row-major per head: C[T, T] = X[T, D] Y[T, D]^T (fp32), the scores and dP. Column-major, that is
// C^T = Y X^T: A = Y stored [D, T] transposed, B = X stored [D, T].
absl::Status SquareProduct(MatmulContext& ctx, const char* what, float* c, const Heads& h, Panel x, Panel y,
                           cudaStream_t stream) {
  const int64_t T = h.s.seq_len, D = h.s.head_dim;
  Gemm g{what, T, T, D, y.ptr, true, y.ld, x.ptr, false, x.ld, c + h.SquareOffset(), T, 0.0f, nullptr};
  g.d_fp32 = true;
  g.batch = h.s.kv_heads;
  g.stride_a = y.stride;
  g.stride_b = x.stride;
  g.stride_d = h.SquareStride();
  return RunGemm(ctx, CUDA_R_16BF, g, stream);
}

// Row-major per head: C[T, D] (+)= P[T, T] Y[T, D] (transpose_p: P^T Y), bf16 (fp32 with
// c_fp32); beta 1 adds into c. Column-major, C^T = Y^T P^T: A = Y stored [D, T], B = P stored
// [T, T] (transposed for P^T Y).
absl::Status PanelProduct(MatmulContext& ctx, const char* what, Panel c, float beta, const bf16* p, bool transpose_p,
                          const Heads& h, Panel y, cudaStream_t stream, bool c_fp32 = false) {
  const int64_t T = h.s.seq_len, D = h.s.head_dim;
  Gemm g{what, D,    T,      T, y.ptr, false, y.ld, p + h.SquareOffset(), transpose_p, T, const_cast<void*>(c.ptr),
         c.ld, beta, nullptr};
  g.d_fp32 = c_fp32;
  g.batch = h.s.kv_heads;
  g.stride_a = y.stride;
  g.stride_b = h.SquareStride();
  g.stride_d = c.stride;
  return RunGemm(ctx, CUDA_R_16BF, g, stream);
}

absl::Status Check(const char* fn, const AttentionShape& s, const void* scratch, size_t scratch_bytes,
                   std::initializer_list<std::pair<const char*, const void*>> buffers) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::CheckAttention(fn, s));
  for (const auto& [name, ptr] : buffers) GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(fn, name, ptr));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(fn, "scratch", scratch));
  if (scratch_bytes < AttentionGemmScratchBytes(s)) {
    return absl::InvalidArgumentError(
        absl::StrCat(fn, ": scratch of ", scratch_bytes, " bytes, needs ", AttentionGemmScratchBytes(s)));
  }
  return absl::OkStatus();
}

float Scale(const AttentionShape& s) { return 1.0f / sqrtf(static_cast<float>(s.head_dim)); }

}  // namespace

size_t AttentionGemmProbsCount(const AttentionShape& shape) { return SquareCount(shape); }

size_t AttentionGemmScratchBytes(const AttentionShape& shape) {
  return Align(SquareCount(shape) * sizeof(float)) + Align(SquareCount(shape) * sizeof(bf16)) +
         Align(KvCount(shape) * sizeof(float));
}

absl::Status AttentionGemmForward(MatmulContext& ctx, bf16* out, bf16* probs, const bf16* qkv, const AttentionShape& s,
                                  void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  constexpr const char* kFn = "AttentionGemmForward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(Check(kFn, s, scratch, scratch_bytes, {{"out", out}, {"probs", probs}, {"qkv", qkv}}));
  if (s.batch == 0 || s.seq_len == 0) return absl::OkStatus();
  const Scratch w = Carve(scratch, s);
  const int64_t T = s.seq_len, rows = s.batch * s.heads * T, group = s.heads / s.kv_heads;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t r = 0; r < group; ++r) {
      const Heads h{s, b, r};
      GRADSYNC_CUDA_RETURN_IF_ERROR(SquareProduct(ctx, "attention scores q k^T", w.scores, h,
                                                  h.Query(qkv, s.qkv_width()), h.KeyValue(qkv, 0), stream));
    }
  }
  internal::LaunchKernel(CausalSoftmaxKernel, Blocks(rows, kRowsPerBlock), kThreads, 0, stream, probs, w.scores, rows,
                         T, Scale(s));
  GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("CausalSoftmaxKernel"));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t r = 0; r < group; ++r) {
      const Heads h{s, b, r};
      GRADSYNC_CUDA_RETURN_IF_ERROR(PanelProduct(ctx, "attention output P v", h.Query(out, s.out_width()), 0.0f, probs,
                                                 false, h, h.KeyValue(qkv, 1), stream));
    }
  }
  return absl::OkStatus();
}

absl::Status AttentionGemmBackward(MatmulContext& ctx, bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* probs,
                                   const AttentionShape& s, void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  constexpr const char* kFn = "AttentionGemmBackward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      Check(kFn, s, scratch, scratch_bytes, {{"dqkv", dqkv}, {"dout", dout}, {"qkv", qkv}, {"probs", probs}}));
  if (s.batch == 0 || s.seq_len == 0) return absl::OkStatus();
  const Scratch w = Carve(scratch, s);
  const int64_t T = s.seq_len, rows = s.batch * s.heads * T, group = s.heads / s.kv_heads, W = s.qkv_width();
  // dq adds into dqkv. With KVH = H each head's dk and dv add into dqkv too; with grouped queries
  // the group's heads first sum in fp32 (ascending r, a fixed order), then add with one rounding.
  const int64_t kv_width = 2 * s.kv_heads * s.head_dim;
  const auto dkv = [&](const Heads& h, int slot) -> Panel {
    if (group == 1) return h.KeyValue(dqkv, slot);
    return {w.dkv + h.b * T * kv_width + slot * s.kv_heads * s.head_dim, kv_width, s.head_dim};
  };
  const auto kv_beta = [&](int64_t r) { return group == 1 || r > 0 ? 1.0f : 0.0f; };
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t r = 0; r < group; ++r) {
      const Heads h{s, b, r};
      GRADSYNC_CUDA_RETURN_IF_ERROR(SquareProduct(ctx, "attention dP = do v^T", w.scores, h,
                                                  h.Query(dout, s.out_width()), h.KeyValue(qkv, 1), stream));
      GRADSYNC_CUDA_RETURN_IF_ERROR(PanelProduct(ctx, "attention dv = P^T do", dkv(h, 1), kv_beta(r), probs, true, h,
                                                 h.Query(dout, s.out_width()), stream, group > 1));
    }
  }
  internal::LaunchKernel(CausalSoftmaxBackwardKernel, Blocks(rows, kRowsPerBlock), kThreads, 0, stream, w.ds, probs,
                         w.scores, rows, T, Scale(s));
  GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("CausalSoftmaxBackwardKernel"));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t r = 0; r < group; ++r) {
      const Heads h{s, b, r};
      GRADSYNC_CUDA_RETURN_IF_ERROR(
          PanelProduct(ctx, "attention dq = dS k", h.Query(dqkv, W), 1.0f, w.ds, false, h, h.KeyValue(qkv, 0), stream));
      GRADSYNC_CUDA_RETURN_IF_ERROR(PanelProduct(ctx, "attention dk = dS^T q", dkv(h, 0), kv_beta(r), w.ds, true, h,
                                                 h.Query(qkv, W), stream, group > 1));
    }
  }
  if (group == 1) return absl::OkStatus();
  const int64_t tokens = s.batch * T;
  internal::LaunchKernel(AddKvKernel, Blocks(tokens * kv_width, kThreads), kThreads, 0, stream, dqkv, w.dkv, tokens,
                         s.out_width(), kv_width);
  return LaunchStatus("AddKvKernel");
}

}  // namespace gradsync::kernels::cuda

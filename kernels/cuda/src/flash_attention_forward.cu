// Tensor-core attention forward pass (math and tiling in flash_attention.cuh).
#include "flash_attention_common.cuh"

namespace gradsync::kernels::cuda {
namespace {

using internal::AttnDims;
using internal::bf16;
using internal::CeilDiv;
using internal::FlashTile;
using internal::kFlashRows;
using internal::kFlashSlices;
using internal::kFlashThreads;
using internal::kFlashWarpRows;
using internal::kWarpSize;
using mma::FragA;
using mma::FragB;
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
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sq = reinterpret_cast<bf16*>(smem);
  bf16* sk = sq + kTile;
  bf16* sv = sk + 2 * kTile;

  // The last query blocks see the most keys: start them first so they do not form the tail.
  const int64_t q0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kFlashRows;
  const int h = blockIdx.y;
  const int64_t b = blockIdx.z;
  const int g = h / (dims.heads / dims.kv_heads);
  const int64_t T = dims.seq_len;
  const bf16* rows = qkv + b * T * dims.qkv_row;
  const bf16* k_head = rows + static_cast<int64_t>(dims.heads + g) * D;
  const bf16* v_head = rows + static_cast<int64_t>(dims.heads + dims.kv_heads + g) * D;
  // Key tiles 0..tiles-1; the last one (k0 = q0) holds the diagonal.
  const int tiles = static_cast<int>(q0 / kFlashRows) + 1;

  internal::CopyTileAsync<D>(sq, rows + static_cast<int64_t>(h) * D, dims.qkv_row, q0, T);
  internal::CopyTileAsync<D>(sk, k_head, dims.qkv_row, 0, T);
  internal::CopyTileAsync<D>(sv, v_head, dims.qkv_row, 0, T);
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
    if (kt + 1 < tiles) {
      // The other buffer was consumed before the barrier that ended the previous tile.
      const int64_t next = static_cast<int64_t>(kt + 1) * kFlashRows;
      internal::CopyTileAsync<D>(sk + (buf ^ 1) * kTile, k_head, dims.qkv_row, next, T);
      internal::CopyTileAsync<D>(sv + (buf ^ 1) * kTile, v_head, dims.qkv_row, next, T);
      mma::CommitCopies();
      mma::WaitCopies<1>();
    } else {
      mma::WaitCopies<0>();
    }
    __syncthreads();
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
#pragma unroll
    for (int j = 0; j < kFlashSlices; ++j) {
      mma::Zero(s[j]);
      if (j >= slices) continue;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        FragB kf;
        mma::LoadBNk(kf, kb + j * mma::kN * kLd + c * mma::kK, kLd, lane);
        mma::Mma(s[j], q[c], kf);
      }
    }

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
      const float m_new = fmaxf(m[r], internal::QuadMax(tile_max[r]));
      // A row with no unmasked key yet keeps m = -inf; subtracting 0 then keeps every 2^x at 0.
      base[r] = m_new == -INFINITY ? 0.0f : m_new;
      correction[r] = exp2f(m[r] - base[r]);
      m[r] = m_new;
    }
    float tile_sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < kFlashSlices; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float p = exp2f(s[j].v[i] - base[i >> 1]);
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
#pragma unroll
    for (int kc = 0; kc < kFlashSlices / 2; ++kc) {
      if (2 * kc >= slices) continue;
      const FragA p = mma::AFromC(s[2 * kc], s[2 * kc + 1]);
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        FragB vf;
        mma::LoadBKn(vf, vb + kc * mma::kK * kLd + c * mma::kN, kLd, lane);
        mma::Mma(o[c], p, vf);
      }
    }
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float sum = internal::QuadSum(l[r]);
    if (row[r] >= T) continue;
    const float inv = 1.0f / sum;
    bf16* y = out + (b * T + row[r]) * dims.out_row + static_cast<int64_t>(h) * D + 2 * mma::Quad(lane);
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      *reinterpret_cast<uint32_t*>(y + c * mma::kN) = mma::PackFloats(o[c].v[2 * r] * inv, o[c].v[2 * r + 1] * inv);
    }
    // m and l are in base 2: log(sum exp(S)) = ln 2 * (m + log2 l).
    if (mma::Quad(lane) == 0) lse[(b * dims.heads + h) * T + row[r]] = (m[r] + log2f(sum)) * internal::kLn2;
  }
}

template <int D>
absl::Status Launch(bf16* out, float* lse, const bf16* qkv, const AttentionShape& shape, cudaStream_t stream) {
  constexpr size_t kSmem = ForwardSmemBytes<D>();
  auto kernel = FlashForwardKernel<D>;
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::AllowSharedMemory(kernel, kSmem, "FlashForwardKernel"));
  const float scale_log2 = internal::kLog2e / sqrtf(static_cast<float>(D));
  const dim3 grid(static_cast<unsigned>(CeilDiv(shape.seq_len, kFlashRows)), static_cast<unsigned>(shape.heads),
                  static_cast<unsigned>(shape.batch));
  kernel<<<grid, kFlashThreads, kSmem, stream>>>(out, lse, qkv, internal::DimsOf(shape), scale_log2);
  return LaunchStatus("FlashForwardKernel");
}

}  // namespace

absl::Status FlashAttentionForward(bf16* out, float* lse, const bf16* qkv, const AttentionShape& shape,
                                   cudaStream_t stream) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      internal::CheckFlashAttention("FlashAttentionForward", shape, {{"out", out}, {"qkv", qkv}}, {{"lse", lse}}));
  if (shape.batch == 0 || shape.seq_len == 0) return absl::OkStatus();
  if (shape.head_dim == 32) return Launch<32>(out, lse, qkv, shape, stream);
  return Launch<64>(out, lse, qkv, shape, stream);
}

}  // namespace gradsync::kernels::cuda

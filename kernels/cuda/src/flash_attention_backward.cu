// Tensor-core attention backward pass (math and tiling in flash_attention.cuh): dQ with delta,
// then dK/dV.
#include "flash_attention_backward.cuh"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::CeilDiv;
using internal::DkvSmemBytes;
using internal::DqSmemBytes;
using internal::FlashDkvKernel;
using internal::FlashDqKernel;
using internal::kFlashRows;
using internal::kFlashThreads;
using internal::Params;

template <int D, bool kAccumulate>
absl::Status Launch(bf16* dqkv, float* delta, const bf16* dout, const bf16* qkv, const bf16* out, const float* lse,
                    const AttentionShape& shape, cudaStream_t stream) {
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  const Params prm{internal::DimsOf(shape), internal::kLog2e * scale, scale};
  const unsigned blocks = static_cast<unsigned>(CeilDiv(shape.seq_len, kFlashRows));

  constexpr size_t kDqSmem = DqSmemBytes<D>();
  auto dq_kernel = FlashDqKernel<D, kAccumulate>;
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::AllowSharedMemory(dq_kernel, kDqSmem, "FlashDqKernel"));
  internal::LaunchKernel(dq_kernel,
                         dim3(blocks, static_cast<unsigned>(shape.heads), static_cast<unsigned>(shape.batch)),
                         kFlashThreads, kDqSmem, stream, dqkv, delta, dout, qkv, out, lse, prm);
  GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("FlashDqKernel"));

  constexpr size_t kDkvSmem = DkvSmemBytes<D>();
  auto dkv_kernel = FlashDkvKernel<D, kAccumulate>;
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::AllowSharedMemory(dkv_kernel, kDkvSmem, "FlashDkvKernel"));
  internal::LaunchKernel(dkv_kernel,
                         dim3(blocks, static_cast<unsigned>(shape.kv_heads), static_cast<unsigned>(shape.batch)),
                         kFlashThreads, kDkvSmem, stream, dqkv, dout, qkv, lse, delta, prm);
  return LaunchStatus("FlashDkvKernel");
}

}  // namespace

absl::Status FlashAttentionBackward(bf16* dqkv, float* delta, const bf16* dout, const bf16* qkv, const bf16* out,
                                    const float* lse, const AttentionShape& shape, cudaStream_t stream, GradMode mode) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::CheckFlashAttention(
      "FlashAttentionBackward", shape, {{"dqkv", dqkv}, {"dout", dout}, {"qkv", qkv}, {"out", out}},
      {{"delta", delta}, {"lse", lse}}));
  if (shape.batch == 0 || shape.seq_len == 0) return absl::OkStatus();
  const bool accumulate = mode == GradMode::kAccumulate;
  if (shape.head_dim == 32) {
    return accumulate ? Launch<32, true>(dqkv, delta, dout, qkv, out, lse, shape, stream)
                      : Launch<32, false>(dqkv, delta, dout, qkv, out, lse, shape, stream);
  }
  return accumulate ? Launch<64, true>(dqkv, delta, dout, qkv, out, lse, shape, stream)
                    : Launch<64, false>(dqkv, delta, dout, qkv, out, lse, shape, stream);
}

}  // namespace gradsync::kernels::cuda

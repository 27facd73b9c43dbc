// Tensor-core attention forward pass (math and tiling in flash_attention.cuh).
#include "flash_attention_forward.cuh"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::CeilDiv;
using internal::FlashForwardKernel;
using internal::ForwardSmemBytes;
using internal::kFlashRows;
using internal::kFlashThreads;

template <int D>
absl::Status Launch(bf16* out, float* lse, const bf16* qkv, const AttentionShape& shape, cudaStream_t stream) {
  constexpr size_t kSmem = ForwardSmemBytes<D>();
  auto kernel = FlashForwardKernel<D>;
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::AllowSharedMemory(kernel, kSmem, "FlashForwardKernel"));
  const float scale_log2 = internal::kLog2e / sqrtf(static_cast<float>(D));
  const dim3 grid(static_cast<unsigned>(CeilDiv(shape.seq_len, kFlashRows)), static_cast<unsigned>(shape.heads),
                  static_cast<unsigned>(shape.batch));
  internal::LaunchKernel(kernel, grid, kFlashThreads, kSmem, stream, out, lse, qkv, internal::DimsOf(shape),
                         scale_log2);
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

// Which shapes and devices the tensor-core attention kernels take, and their argument checks.
#include "flash_attention_common.cuh"

namespace gradsync::kernels::cuda {

bool FlashAttentionSupports(const AttentionShape& shape) { return shape.head_dim == 32 || shape.head_dim == 64; }

bool FlashAttentionDeviceSupported() {
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return major >= 8;
}

namespace internal {

absl::Status CheckFlashAttention(const char* fn, const AttentionShape& s, Buffers tensors, Buffers stats) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckAttention(fn, s));
  if (!FlashAttentionSupports(s)) {
    return absl::InvalidArgumentError(
        absl::StrCat(fn, ": shape.head_dim must be 32 or 64 for the tensor-core kernels, got ", s.head_dim));
  }
  if (s.batch == 0 || s.seq_len == 0) return absl::OkStatus();  // nothing to read or write
  for (const auto& [name, ptr] : stats) GRADSYNC_CUDA_RETURN_IF_ERROR(NotNull(fn, name, ptr));
  for (const auto& [name, ptr] : tensors) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(NotNull(fn, name, ptr));
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) {
      return absl::InvalidArgumentError(absl::StrCat(fn, ": ", name, " must be 16-byte aligned"));
    }
  }
  if (!FlashAttentionDeviceSupported()) {
    return absl::FailedPreconditionError(
        absl::StrCat(fn, ": the tensor-core kernels need a device of compute capability 8.0 or later"));
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace gradsync::kernels::cuda

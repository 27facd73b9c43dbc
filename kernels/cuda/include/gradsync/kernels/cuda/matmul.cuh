// Fully connected layer on cuBLASLt, in the layout of kernels/cpu/matmul.h: row-major activations
// inp [N, IC], out [N, OC], weight [OC, IC].
//
//   forward:  out[n, o]   = sum_i inp[n, i] * w[o, i] + bias[o]
//   backward: dinp[n, i] += sum_o dout[n, o] * w[o, i]        (or =, GradMode::kOverwrite)
//             dw[o, i]   += sum_n dout[n, o] * inp[n, i]
//             dbias[o]   += sum_n dout[n, o]
//
// cuBLASLt is column-major, and a row-major [R, C] matrix is a column-major [C, R] one, so every
// product is issued transposed: out^T = W^T' inp^T becomes (m, n, k) = (OC, N, IC) with A = W
// transposed, and likewise for the two backward products. bf16 operands multiply with fp32
// accumulation (CUBLAS_COMPUTE_32F) and round once into the bf16 output; float operands use plain
// fp32 unless the context allows TF32. The backward products accumulate through beta = 1. The
// bias of the forward pass is cuBLASLt's bias epilogue; dbias is a column sum of our own
// (column_reduce.cuh) rather than the BGRAD epilogue, because it must accumulate and be
// deterministic.
//
// Determinism: cuBLASLt returns the same bits for the same algorithm, shapes and pointer
// alignments on one GPU model; the algorithm comes from its heuristic, queried with the same
// inputs each call, and no split-K reduction with atomics is involved. dbias adds in a fixed
// order. So the whole layer is bitwise reproducible on one GPU model and library version.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/kernels/cuda/grad_mode.h"

namespace gradsync::kernels::cuda {

namespace internal {
class GemmPlanCache;
}  // namespace internal

// A cuBLASLt handle and its workspace, bound to the device that was current at Create. Use it on
// one stream at a time: calls share the workspace, and stream order is what keeps them apart.
// The backward pass also uses the workspace as scratch for the dbias partial sums, and a second
// buffer, grown on first use, for the partial products of a split dweight.
class MatmulContext {
 public:
  // 32 MiB: what cuBLASLt's heuristics want for the large Hopper kernels.
  static constexpr size_t kDefaultWorkspaceBytes = size_t{32} << 20;

  struct Options {
    size_t workspace_bytes = kDefaultWorkspaceBytes;
    // float products only: TF32 tensor cores (10-bit mantissa inputs; faster, less exact). Off by
    // default so float matches the CPU reference to fp32 rounding.
    bool allow_tf32 = false;
  };

  // INTERNAL if the handle or the workspace cannot be created on the current device.
  static absl::StatusOr<std::unique_ptr<MatmulContext>> Create(Options options);
  static absl::StatusOr<std::unique_ptr<MatmulContext>> Create() { return Create(Options{}); }

  MatmulContext(const MatmulContext&) = delete;
  MatmulContext& operator=(const MatmulContext&) = delete;
  ~MatmulContext();

  cublasLtHandle_t handle() const { return handle_; }
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return options_.workspace_bytes; }
  bool allow_tf32() const { return options_.allow_tf32; }
  int device() const { return device_; }
  // At least `bytes` of device scratch apart from the workspace, kept for later calls (grows with
  // cudaMalloc, so the first call at a size is not free). INTERNAL if the allocation fails.
  absl::StatusOr<void*> Scratch(size_t bytes);
  // The descriptors and algorithm of each kind of product run so far (src/gemm_engine.cu).
  internal::GemmPlanCache& plans() { return *plans_; }

 private:
  MatmulContext(Options options, int device, cublasLtHandle_t handle, void* workspace);

  Options options_;
  int device_ = 0;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  std::unique_ptr<internal::GemmPlanCache> plans_;
};

// out = inp x w^T + bias (overwrites out; bias may be null). T is float or __nv_bfloat16.
// Rows of out lie out_stride elements apart (0: out_features, the packed layout); a wider
// stride lets an odd width, such as a vocabulary of 50257, keep every row 16-byte aligned, which
// the fast tensor-core kernels need. The columns past out_features are never touched.
// INVALID_ARGUMENT for a negative size or a null buffer that the sizes need; FAILED_PRECONDITION
// if the current device is not the context's; NOT_FOUND when cuBLASLt offers no algorithm for
// the shapes and alignments; INTERNAL when a CUDA or cuBLASLt call fails.
template <typename T>
absl::Status MatmulForward(MatmulContext& ctx, T* out, const T* inp, const T* weight, const T* bias, int64_t n,
                           int64_t in_features, int64_t out_features, cudaStream_t stream, int64_t out_stride = 0);

// Accumulates (+=) the gradients of MatmulForward given dout; a null dinp, dweight or dbias skips
// that gradient. With dinp_mode kOverwrite, dinp is written (beta = 0) instead: the caller need
// not zero it first. A dweight with few output tiles and many rows (an attention projection's
// [C, C] over 16K tokens) splits the rows into a batch of fp32 partial products that a kernel
// then adds in order: one product over all rows would leave most of the GPU idle. dout's rows
// lie dout_stride elements apart (0: out_features). Errors as MatmulForward.
template <typename T>
absl::Status MatmulBackward(MatmulContext& ctx, T* dinp, T* dweight, T* dbias, const T* dout, const T* inp,
                            const T* weight, int64_t n, int64_t in_features, int64_t out_features, cudaStream_t stream,
                            int64_t dout_stride = 0, GradMode dinp_mode = GradMode::kAccumulate);

}  // namespace gradsync::kernels::cuda

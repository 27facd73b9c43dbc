// The GEMM engine: one cuBLASLt product, planned once per kind, for the linear layer (matmul.cu)
// and the batched attention products (attention_gemm.cu). Defined in gemm_engine.cu, with
// MatmulContext's members. Private to kernels/cuda.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "gradsync/kernels/cuda/matmul.cuh"

namespace gradsync::kernels::cuda::internal {

// A column-major product D = alpha op(A) op(B) + beta D (+ bias[row] when bias is not null),
// with op(A) [m, k], op(B) [k, n], D [m, n]; A is stored [k, m] when trans_a, else [m, k]
// (likewise B). With batch > 1, `batch` such products, the i-th at a + i stride_a, b + i
// stride_b, d + i stride_d (elements). A and B have the element type RunGemm is given; D too
// unless d_fp32. Accumulation is fp32.
struct Gemm {
  const char* what;
  int64_t m, n, k;
  const void* a;
  bool trans_a;
  int64_t lda;
  const void* b;
  bool trans_b;
  int64_t ldb;
  void* d;
  int64_t ldd;
  float beta;
  const void* bias;
  float alpha = 1.0f;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  bool d_fp32 = false;
};

// Runs `g` on `stream` with the context's handle and workspace. NOT_FOUND when cuBLASLt offers no
// algorithm for the shapes and alignments; INTERNAL for cuBLASLt's errors.
absl::Status RunGemm(MatmulContext& ctx, cudaDataType_t type, const Gemm& g, cudaStream_t stream);

}  // namespace gradsync::kernels::cuda::internal

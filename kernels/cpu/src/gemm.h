// One BLAS entry point for both precisions, so kernels templated on float/double are written
// once. Row-major: C = alpha * op(A) * op(B) + beta * C, with op(A) [m, k] and op(B) [k, n].
// Private to kernels/cpu.
#pragma once

#include <cblas.h>

#include <cstdint>

namespace gradsync::kernels::cpu::internal {

inline void Gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

inline void Gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace gradsync::kernels::cpu::internal

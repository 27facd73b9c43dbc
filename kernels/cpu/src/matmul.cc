#include "gradsync/kernels/cpu/matmul.h"

#include <algorithm>

#include "gemm.h"

namespace gradsync::kernels::cpu {

using internal::Gemm;

namespace {

// acc += row, apart with its buffers declared disjoint so that it vectorises.
template <typename T>
inline void AddRow(T* __restrict acc, const T* __restrict row, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += row[i];
}

}  // namespace

template <typename T>
void MatmulForward(T* out, const T* inp, const T* weight, const T* bias, int64_t n, int64_t in_features,
                   int64_t out_features) {
  // BLAS rejects zero leading dimensions, and there is nothing to compute anyway.
  if (n == 0 || out_features == 0) return;
  T beta = 0;
  if (bias != nullptr) {
    for (int64_t r = 0; r < n; ++r) std::copy_n(bias, out_features, out + r * out_features);
    beta = 1;
  }
  if (in_features == 0) {
    if (bias == nullptr) std::fill_n(out, n * out_features, T{0});
    return;
  }
  Gemm(CblasNoTrans, CblasTrans, n, out_features, in_features, T{1}, inp, in_features, weight, in_features, beta, out,
       out_features);
}

template <typename T>
void MatmulBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t n,
                    int64_t in_features, int64_t out_features) {
  if (n == 0 || out_features == 0) return;
  if (in_features > 0) {
    if (dinp != nullptr) {
      Gemm(CblasNoTrans, CblasNoTrans, n, in_features, out_features, T{1}, dout, out_features, weight, in_features,
           T{1}, dinp, in_features);
    }
    if (dweight != nullptr) {
      Gemm(CblasTrans, CblasNoTrans, out_features, in_features, n, T{1}, dout, out_features, inp, in_features, T{1},
           dweight, in_features);
    }
  }
  if (dbias != nullptr) {
    for (int64_t r = 0; r < n; ++r) AddRow(dbias, dout + r * out_features, out_features);
  }
}

template void MatmulForward<float>(float*, const float*, const float*, const float*, int64_t, int64_t, int64_t);
template void MatmulForward<double>(double*, const double*, const double*, const double*, int64_t, int64_t, int64_t);
template void MatmulBackward<float>(float*, float*, float*, const float*, const float*, const float*, int64_t, int64_t,
                                    int64_t);
template void MatmulBackward<double>(double*, double*, double*, const double*, const double*, const double*, int64_t,
                                     int64_t, int64_t);

}  // namespace gradsync::kernels::cpu

#include "gradsync/kernels/cpu/layernorm.h"

#include <cmath>

#include "clones.h"
#include "reduce.h"

namespace gradsync::kernels::cpu {

using internal::SumOf;

template <typename T>
GRADSYNC_CLONES void LayerNormForward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int64_t n,
                                      int64_t c, double eps) {
  for (int64_t r = 0; r < n; ++r) {
    const T* x = inp + r * c;
    T* y = out + r * c;
    const double mu = SumOf(c, [x](int64_t i) { return x[i]; }) / static_cast<double>(c);
    const double sq = SumOf(c, [x, mu](int64_t i) {
      const double d = x[i] - mu;
      return d * d;
    });
    const double s = 1.0 / std::sqrt(sq / static_cast<double>(c) + eps);
    const T m = static_cast<T>(mu), rs = static_cast<T>(s);
    for (int64_t i = 0; i < c; ++i) y[i] = (x[i] - m) * rs * weight[i] + bias[i];
    mean[r] = m;
    rstd[r] = rs;
  }
}

namespace {

// dx += rs (g - mean(g) - xhat mean(g xhat)), dweight += dy xhat, dbias += dy for one row, with
// g = weight dy. Apart, with its buffers declared disjoint, so that it vectorises.
template <typename T>
inline void LayerNormBackwardRow(T* __restrict dx, T* __restrict dweight, T* __restrict dbias, const T* __restrict dy,
                                 const T* __restrict x, const T* __restrict weight, T m, T rs, T mean_g, T mean_g_xhat,
                                 int64_t c) {
  for (int64_t i = 0; i < c; ++i) {
    const T xhat = (x[i] - m) * rs;
    const T g = weight[i] * dy[i];
    dx[i] += rs * (g - mean_g - xhat * mean_g_xhat);
    dweight[i] += dy[i] * xhat;
    dbias[i] += dy[i];
  }
}

}  // namespace

template <typename T>
GRADSYNC_CLONES void LayerNormBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                                       const T* mean, const T* rstd, int64_t n, int64_t c) {
  for (int64_t r = 0; r < n; ++r) {
    const T* x = inp + r * c;
    const T* dy = dout + r * c;
    const T m = mean[r], rs = rstd[r];
    const double sum_g = SumOf(c, [&](int64_t i) { return weight[i] * dy[i]; });
    const double sum_g_xhat = SumOf(c, [&](int64_t i) { return weight[i] * dy[i] * ((x[i] - m) * rs); });
    const T mean_g = static_cast<T>(sum_g / static_cast<double>(c));
    const T mean_g_xhat = static_cast<T>(sum_g_xhat / static_cast<double>(c));
    LayerNormBackwardRow(dinp + r * c, dweight, dbias, dy, x, weight, m, rs, mean_g, mean_g_xhat, c);
  }
}

template void LayerNormForward<float>(float*, float*, float*, const float*, const float*, const float*, int64_t,
                                      int64_t, double);
template void LayerNormForward<double>(double*, double*, double*, const double*, const double*, const double*, int64_t,
                                       int64_t, double);
template void LayerNormBackward<float>(float*, float*, float*, const float*, const float*, const float*, const float*,
                                       const float*, int64_t, int64_t);
template void LayerNormBackward<double>(double*, double*, double*, const double*, const double*, const double*,
                                        const double*, const double*, int64_t, int64_t);

}  // namespace gradsync::kernels::cpu

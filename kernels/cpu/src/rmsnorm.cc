#include "gradsync/kernels/cpu/rmsnorm.h"

#include <cmath>

#include "clones.h"
#include "reduce.h"

namespace gradsync::kernels::cpu {

using internal::SumOf;

template <typename T>
GRADSYNC_CLONES void RmsNormForward(T* out, T* rstd, const T* inp, const T* weight, int64_t n, int64_t c, double eps) {
  for (int64_t r = 0; r < n; ++r) {
    const T* x = inp + r * c;
    T* y = out + r * c;
    const double sq = SumOf(c, [x](int64_t i) { return static_cast<double>(x[i]) * x[i]; });
    const T rs = static_cast<T>(1.0 / std::sqrt(sq / static_cast<double>(c) + eps));
    for (int64_t i = 0; i < c; ++i) y[i] = x[i] * rs * weight[i];
    rstd[r] = rs;
  }
}

template <typename T>
GRADSYNC_CLONES void RmsNormBackward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const T* rstd,
                                     int64_t n, int64_t c) {
  for (int64_t r = 0; r < n; ++r) {
    const T* x = inp + r * c;
    const T* dy = dout + r * c;
    T* dx = dinp + r * c;
    const T rs = rstd[r];
    const double sum_g_xhat = SumOf(c, [&](int64_t i) { return weight[i] * dy[i] * (x[i] * rs); });
    const T mean_g_xhat = static_cast<T>(sum_g_xhat / static_cast<double>(c));
    for (int64_t i = 0; i < c; ++i) {
      const T xhat = x[i] * rs;
      dx[i] += rs * (weight[i] * dy[i] - xhat * mean_g_xhat);
      dweight[i] += dy[i] * xhat;
    }
  }
}

template void RmsNormForward<float>(float*, float*, const float*, const float*, int64_t, int64_t, double);
template void RmsNormForward<double>(double*, double*, const double*, const double*, int64_t, int64_t, double);
template void RmsNormBackward<float>(float*, float*, const float*, const float*, const float*, const float*, int64_t,
                                     int64_t);
template void RmsNormBackward<double>(double*, double*, const double*, const double*, const double*, const double*,
                                      int64_t, int64_t);

}  // namespace gradsync::kernels::cpu

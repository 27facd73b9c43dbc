#include "gradsync/kernels/cpu/swiglu.h"

#include "clones.h"
#include "fast_exp.h"

namespace gradsync::kernels::cpu {

using internal::Sigmoid;
using internal::SigmoidAndComplement;

template <typename T>
GRADSYNC_CLONES void SwiGluForward(T* out, const T* inp, int64_t n, int64_t m) {
  for (int64_t r = 0; r < n; ++r) {
    const T* g = inp + r * 2 * m;
    const T* u = g + m;
    T* y = out + r * m;
    for (int64_t i = 0; i < m; ++i) y[i] = g[i] * Sigmoid(g[i]) * u[i];
  }
}

template <typename T>
GRADSYNC_CLONES void SwiGluBackward(T* dinp, const T* inp, const T* dout, int64_t n, int64_t m) {
  for (int64_t r = 0; r < n; ++r) {
    const T* g = inp + r * 2 * m;
    const T* u = g + m;
    const T* dy = dout + r * m;
    T* dg = dinp + r * 2 * m;
    T* du = dg + m;
    for (int64_t i = 0; i < m; ++i) {
      const auto [s, one_minus_s] = SigmoidAndComplement(g[i]);
      dg[i] += dy[i] * u[i] * s * (T{1} + g[i] * one_minus_s);
      du[i] += dy[i] * g[i] * s;
    }
  }
}

template void SwiGluForward<float>(float*, const float*, int64_t, int64_t);
template void SwiGluForward<double>(double*, const double*, int64_t, int64_t);
template void SwiGluBackward<float>(float*, const float*, const float*, int64_t, int64_t);
template void SwiGluBackward<double>(double*, const double*, const double*, int64_t, int64_t);

}  // namespace gradsync::kernels::cpu

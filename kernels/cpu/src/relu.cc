#include "gradsync/kernels/cpu/relu.h"

namespace gradsync::kernels::cpu {

template <typename T>
void ReluForward(T* out, const T* inp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = inp[i] > T{0} ? inp[i] : T{0};
}

template <typename T>
void ReluBackward(T* dinp, const T* inp, const T* dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (inp[i] > T{0}) dinp[i] += dout[i];
  }
}

template void ReluForward<float>(float*, const float*, int64_t);
template void ReluForward<double>(double*, const double*, int64_t);
template void ReluBackward<float>(float*, const float*, const float*, int64_t);
template void ReluBackward<double>(double*, const double*, const double*, int64_t);

}  // namespace gradsync::kernels::cpu

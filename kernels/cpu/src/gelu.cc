#include "gradsync/kernels/cpu/gelu.h"

#include "clones.h"
#include "fast_exp.h"

namespace gradsync::kernels::cpu {
namespace {

using internal::Sigmoid;
using internal::SigmoidAndComplement;

template <typename T>
constexpr T kSqrt2OverPi = static_cast<T>(0.797884560802865355879892119868763737L);
template <typename T>
constexpr T kCubic = static_cast<T>(0.044715);

}  // namespace

// 0.5 (1 + tanh(u)) = sigmoid(2u), which has no cancellation where tanh(u) is near -1 and
// needs one exp; 1 - tanh(u)^2 = 4 s (1 - s).
template <typename T>
GRADSYNC_CLONES void GeluForward(T* out, const T* inp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T x = inp[i];
    const T u = kSqrt2OverPi<T> * (x + kCubic<T> * x * x * x);
    out[i] = x * Sigmoid(T{2} * u);
  }
}

template <typename T>
GRADSYNC_CLONES void GeluBackward(T* dinp, const T* inp, const T* dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T x = inp[i];
    const T u = kSqrt2OverPi<T> * (x + kCubic<T> * x * x * x);
    const auto [s, one_minus_s] = SigmoidAndComplement(T{2} * u);
    const T du_dx = kSqrt2OverPi<T> * (T{1} + T{3} * kCubic<T> * x * x);
    const T grad = s + T{2} * x * s * one_minus_s * du_dx;
    dinp[i] += grad * dout[i];
  }
}

template void GeluForward<float>(float*, const float*, int64_t);
template void GeluForward<double>(double*, const double*, int64_t);
template void GeluBackward<float>(float*, const float*, const float*, int64_t);
template void GeluBackward<double>(double*, const double*, const double*, int64_t);

}  // namespace gradsync::kernels::cpu

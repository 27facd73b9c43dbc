// exp for the elementwise kernels' float path, written so that loops over it vectorise.
//
//   exp(x) = 2^n * exp(r),  n = round(x / ln 2),  r = x - n ln 2 in [-ln2/2, ln2/2]
//   exp(r) ~ 1 + r + r^2 * P(r)     (Cephes' expf polynomial, degree 5; relative error ~2e-7)
//
// ln 2 is split in two constants so that r is exact; the rounding uses the 1.5 * 2^23 trick
// (no rint call), and 2^n is built from its exponent bits. Inputs are clamped to [-87, 87], so
// no result is a denormal (slow) or infinite, and 1 / (1 + exp(87)) is still a normal float.
// The double instantiation is std::exp (clamped to [-700, 700], so it stays finite too), so
// finite-difference tests in double stay exact.
// Private to kernels/cpu.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace gradsync::kernels::cpu::internal {

inline float FastExp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  x = std::max(std::min(x, 87.0f), -87.0f);
  const float n = (x * kLog2e + kRound) - kRound;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = (p * r * r + r) + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  return e * std::bit_cast<float>(bits);
}

template <typename T>
inline T Exp(T x) {
  return std::exp(std::max(std::min(x, T{700}), T{-700}));
}
template <>
inline float Exp<float>(float x) {
  return FastExp(x);
}

// 1 / (1 + exp(-x)).
template <typename T>
inline T Sigmoid(T x) {
  return T{1} / (T{1} + Exp(-x));
}

// sigmoid(x) and 1 - sigmoid(x) = exp(-x) sigmoid(x), the latter without the cancellation of
// 1 - s where s is near 1.
template <typename T>
struct SigmoidPair {
  T s, one_minus_s;
};
template <typename T>
inline SigmoidPair<T> SigmoidAndComplement(T x) {
  const T e = Exp(-x);
  const T s = T{1} / (T{1} + e);
  return {s, e * s};
}

}  // namespace gradsync::kernels::cpu::internal

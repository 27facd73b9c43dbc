// tanh for the elementwise kernels' float path, written so that loops over it vectorise.
//
// Lambert's continued fraction  tanh(x) = x / (1 + x^2 / (3 + x^2 / (5 + ...)))  cut after the
// term 25 is the rational function  x P(x^2) / Q(x^2)  below (P and Q of degree 6, coefficients
// normalised to P(0) = Q(0) = 1, all positive, so Horner's rule on x^2 >= 0 has no cancellation).
// On [-9, 9] it is within 2e-8 of tanh in exact arithmetic and within 3.3e-7 (about 3 ulp of 1)
// evaluated in float; outside, tanh rounds to +-1 in float, so the input is clamped there.
// One division and 13 FMAs: measured 2.2x faster than the exp-based form on AVX2, whose
// exponent-bit tricks and division serialise.
// The double instantiation is std::tanh, so finite-difference tests in double stay exact.
// Private to kernels/cpu.
#pragma once

#include <algorithm>
#include <cmath>

namespace gradsync::kernels::cpu::internal {

inline float FastTanh(float x) {
  x = std::max(std::min(x, 9.0f), -9.0f);
  const float y = x * x;
  float p = 1.264885555749117e-13f;
  p = p * y + 5.179706350792634e-10f;
  p = p * y + 3.2286836253274086e-07f;
  p = p * y + 6.625258799171843e-05f;
  p = p * y + 5.2173913043478265e-03f;
  p = p * y + 1.4666666666666667e-01f;
  p = p * y + 1.0f;
  float q = 1.1510458557316966e-11f;
  q = q * y + 1.5193805295658393e-08f;
  q = q * y + 5.230467473030402e-06f;
  q = q * y + 6.625258799171842e-04f;
  q = q * y + 3.188405797101449e-02f;
  q = q * y + 4.8e-01f;
  q = q * y + 1.0f;
  return x * p / q;
}

template <typename T>
inline T Tanh(T x) {
  return std::tanh(x);
}
template <>
inline float Tanh<float>(float x) {
  return FastTanh(x);
}

}  // namespace gradsync::kernels::cpu::internal

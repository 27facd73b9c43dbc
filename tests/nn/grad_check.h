// Helpers for checking backward kernels in double against central finite differences of
// L(x) = <dout, forward(x)>.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "gradsync/core/rng.h"
#include "gtest/gtest.h"

namespace gradsync::testing {

inline std::vector<double> RandomDoubles(int64_t n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  std::vector<double> v(n);
  for (double& x : v) x = scale * rng.Normal();
  return v;
}

inline double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

// d<dout, forward()>/dx_i for every element of x, by central differences; `forward` reads x
// (captured by reference) and returns the output. x is restored on return.
template <typename Forward>
std::vector<double> NumericGrad(Forward forward, std::vector<double>& x, const std::vector<double>& dout,
                                double eps = 1e-5) {
  std::vector<double> grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + eps;
    const double plus = Dot(dout, forward());
    x[i] = saved - eps;
    const double minus = Dot(dout, forward());
    x[i] = saved;
    grad[i] = (plus - minus) / (2.0 * eps);
  }
  return grad;
}

// In double with eps 1e-5 the truncation error is ~1e-10 and rounding ~1e-11, so 1e-7 leaves a
// wide margin yet catches any real mistake.
inline void ExpectGradsNear(const std::vector<double>& analytic, const std::vector<double>& numeric, const char* what) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  for (size_t i = 0; i < analytic.size(); ++i) {
    EXPECT_NEAR(analytic[i], numeric[i], 1e-7 * (1.0 + std::abs(numeric[i]))) << what << " element " << i;
  }
}

// analytic - start: what a backward kernel added to a gradient buffer that began at `start`.
inline std::vector<double> Added(const std::vector<double>& after, const std::vector<double>& start) {
  std::vector<double> d(after.size());
  for (size_t i = 0; i < after.size(); ++i) d[i] = after[i] - start[i];
  return d;
}

}  // namespace gradsync::testing

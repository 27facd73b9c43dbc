// The CPU kernels against naive loops (matmul, softmax + cross-entropy) and central finite
// differences in double (activations).
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <vector>

#include "gradsync/core/rng.h"
#include "gradsync/kernels/cpu/gelu.h"
#include "gradsync/kernels/cpu/matmul.h"
#include "gradsync/kernels/cpu/relu.h"
#include "gradsync/kernels/cpu/softmax_xent.h"
#include "gtest/gtest.h"

namespace gradsync::kernels::cpu {
namespace {

template <typename T>
std::vector<T> RandomVector(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(rng.Normal());
  return v;
}

// One BLAS product against a double reference. An element that sums n terms (products, plus the
// bias or the gradient it accumulates into) in floating point, in whatever order and blocking the
// BLAS kernel picks, with or without fused multiply-adds, is off by at most
// gamma_n = n u / (1 - n u) times the sum of its terms' magnitudes (Higham, Accuracy and Stability
// of Numerical Algorithms, 2nd ed., section 3.1), u the type's unit roundoff. The reference
// carries each element's magnitude sum in `magnitude` and its term count in `terms`; the double
// reference's own rounding (2^-53) adds nothing visible at float's scale.
template <typename T>
double Gamma(int64_t terms) {
  const double u = std::numeric_limits<T>::epsilon() / 2;
  return static_cast<double>(terms) * u / (1.0 - static_cast<double>(terms) * u);
}

struct Reference {
  explicit Reference(size_t size, int64_t terms) : value(size), magnitude(size), terms(terms) {}
  std::vector<double> value, magnitude;
  int64_t terms;
  void Add(size_t i, double term) {
    value[i] += term;
    magnitude[i] += std::abs(term);
  }
};

template <typename T>
void ExpectClose(const std::vector<T>& actual, const Reference& want) {
  ASSERT_EQ(actual.size(), want.value.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], want.value[i], Gamma<T>(want.terms) * want.magnitude[i]) << "at " << i;
  }
}

struct Shape {
  int64_t n, ic, oc;
};
constexpr Shape kShapes[] = {{1, 1, 1}, {3, 4, 5}, {7, 13, 2}, {16, 32, 64}, {33, 17, 9}};

template <typename T>
class MatmulTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(MatmulTest, FloatTypes);

TYPED_TEST(MatmulTest, ForwardMatchesNaiveLoops) {
  using T = TypeParam;
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(testing::Message() << s.n << "x" << s.ic << "->" << s.oc);
    const std::vector<T> inp = RandomVector<T>(s.n * s.ic, 1);
    const std::vector<T> w = RandomVector<T>(s.oc * s.ic, 2);
    const std::vector<T> bias = RandomVector<T>(s.oc, 3);
    Reference expected(s.n * s.oc, s.ic + 1), expected_no_bias(s.n * s.oc, s.ic);
    for (int64_t r = 0; r < s.n; ++r) {
      for (int64_t o = 0; o < s.oc; ++o) {
        for (int64_t i = 0; i < s.ic; ++i) {
          const double term = double{inp[r * s.ic + i]} * w[o * s.ic + i];
          expected.Add(r * s.oc + o, term);
          expected_no_bias.Add(r * s.oc + o, term);
        }
        expected.Add(r * s.oc + o, bias[o]);
      }
    }
    // Garbage in `out` must not leak through: forward overwrites.
    std::vector<T> out(s.n * s.oc, T{7});
    MatmulForward(out.data(), inp.data(), w.data(), bias.data(), s.n, s.ic, s.oc);
    ExpectClose(out, expected);
    std::fill(out.begin(), out.end(), T{7});
    MatmulForward<T>(out.data(), inp.data(), w.data(), nullptr, s.n, s.ic, s.oc);
    ExpectClose(out, expected_no_bias);
  }
}

TYPED_TEST(MatmulTest, BackwardAccumulatesNaiveGradients) {
  using T = TypeParam;
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(testing::Message() << s.n << "x" << s.ic << "->" << s.oc);
    const std::vector<T> inp = RandomVector<T>(s.n * s.ic, 11);
    const std::vector<T> w = RandomVector<T>(s.oc * s.ic, 12);
    const std::vector<T> dout = RandomVector<T>(s.n * s.oc, 13);
    // Start from nonzero gradients to check that the kernel adds to them.
    std::vector<T> dinp = RandomVector<T>(s.n * s.ic, 14);
    std::vector<T> dw = RandomVector<T>(s.oc * s.ic, 15);
    std::vector<T> db = RandomVector<T>(s.oc, 16);
    // Each starts from the gradient already there: one more term.
    Reference want_dinp(dinp.size(), s.oc + 1), want_dw(dw.size(), s.n + 1), want_db(db.size(), s.n + 1);
    for (size_t i = 0; i < dinp.size(); ++i) want_dinp.Add(i, dinp[i]);
    for (size_t i = 0; i < dw.size(); ++i) want_dw.Add(i, dw[i]);
    for (size_t i = 0; i < db.size(); ++i) want_db.Add(i, db[i]);
    for (int64_t r = 0; r < s.n; ++r) {
      for (int64_t o = 0; o < s.oc; ++o) {
        const double g = dout[r * s.oc + o];
        want_db.Add(o, g);
        for (int64_t i = 0; i < s.ic; ++i) {
          want_dinp.Add(r * s.ic + i, g * w[o * s.ic + i]);
          want_dw.Add(o * s.ic + i, g * inp[r * s.ic + i]);
        }
      }
    }
    MatmulBackward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), s.n, s.ic, s.oc);
    ExpectClose(dinp, want_dinp);
    ExpectClose(dw, want_dw);
    ExpectClose(db, want_db);
  }
}

TYPED_TEST(MatmulTest, BackwardSkipsNullGradients) {
  using T = TypeParam;
  const Shape s{4, 3, 2};
  const std::vector<T> inp = RandomVector<T>(s.n * s.ic, 21);
  const std::vector<T> w = RandomVector<T>(s.oc * s.ic, 22);
  const std::vector<T> dout = RandomVector<T>(s.n * s.oc, 23);
  std::vector<T> dw(s.oc * s.ic, T{0}), dw_all(s.oc * s.ic, T{0});
  std::vector<T> dinp_all(s.n * s.ic, T{0}), db_all(s.oc, T{0});
  MatmulBackward<T>(nullptr, dw.data(), nullptr, dout.data(), inp.data(), w.data(), s.n, s.ic, s.oc);
  MatmulBackward(dinp_all.data(), dw_all.data(), db_all.data(), dout.data(), inp.data(), w.data(), s.n, s.ic, s.oc);
  EXPECT_EQ(dw, dw_all);
}

TYPED_TEST(MatmulTest, EmptyBatchTouchesNothing) {
  using T = TypeParam;
  const std::vector<T> w = RandomVector<T>(6, 31);
  std::vector<T> dw(6, T{1}), db(2, T{1});
  MatmulForward<T>(nullptr, nullptr, w.data(), nullptr, 0, 3, 2);
  MatmulBackward<T>(nullptr, dw.data(), db.data(), nullptr, nullptr, w.data(), 0, 3, 2);
  EXPECT_EQ(dw, std::vector<T>(6, T{1}));
  EXPECT_EQ(db, std::vector<T>(2, T{1}));
}

// -log softmax(z)[t], written the obvious way (fine for the small logits used with it).
double DirectXent(const std::vector<double>& z, int t) {
  double sum = 0.0;
  for (double x : z) sum += std::exp(x);
  return -std::log(std::exp(z[t]) / sum);
}

template <typename T>
class SoftmaxXentTypedTest : public ::testing::Test {};
TYPED_TEST_SUITE(SoftmaxXentTypedTest, FloatTypes);

TYPED_TEST(SoftmaxXentTypedTest, MatchesDirectFormula) {
  using T = TypeParam;
  constexpr int64_t kN = 5, kV = 7;
  const std::vector<T> logits = RandomVector<T>(kN * kV, 41);
  const std::vector<int32_t> targets = {3, kIgnoreIndex, 0, 6, 2};
  constexpr T kScale = T{0.25};
  std::vector<T> dlogits(kN * kV, T{9});
  const XentSum got = SoftmaxCrossEntropy(dlogits.data(), logits.data(), targets.data(), kN, kV, kScale);

  double want_loss = 0.0;
  // p_j = exp(z_j - max) / sum: the exponentials (correctly rounded to within an ulp), the sum of
  // kV of them and the division keep p_j within (kV + 3) u of itself; the subtraction of the
  // target's 1 and the scale add two roundings of the result: kV + 5 terms of magnitude p_j + 1.
  Reference want_d(kN * kV, kV + 5);
  for (int64_t r = 0; r < kN; ++r) {
    if (targets[r] == kIgnoreIndex) continue;
    std::vector<double> z(logits.begin() + r * kV, logits.begin() + (r + 1) * kV);
    want_loss += DirectXent(z, targets[r]);
    double sum = 0.0;
    for (double x : z) sum += std::exp(x);
    for (int64_t j = 0; j < kV; ++j) {
      const double p = std::exp(z[j]) / sum, one = j == targets[r] ? 1.0 : 0.0;
      want_d.value[r * kV + j] = kScale * (p - one);
      want_d.magnitude[r * kV + j] = kScale * (p + one);
    }
  }
  EXPECT_EQ(got.count, 4);
  EXPECT_NEAR(got.loss_sum, want_loss, 1e-6 * want_loss);
  ExpectClose(dlogits, want_d);
  for (int64_t j = 0; j < kV; ++j) EXPECT_EQ(dlogits[kV + j], T{0}) << "ignored row";

  // Without a gradient buffer the loss is the same; in place, the gradient is the same.
  const XentSum loss_only = SoftmaxCrossEntropy<T>(nullptr, logits.data(), targets.data(), kN, kV, kScale);
  EXPECT_EQ(loss_only.loss_sum, got.loss_sum);
  std::vector<T> in_place = logits;
  SoftmaxCrossEntropy(in_place.data(), in_place.data(), targets.data(), kN, kV, kScale);
  EXPECT_EQ(in_place, dlogits);
}

TEST(SoftmaxXentTest, LargeLogitsStayFinite) {
  const std::vector<float> logits = {1000.0f, 999.0f, -1000.0f};
  const std::vector<int32_t> targets = {1};
  std::vector<float> d(3);
  const XentSum got = SoftmaxCrossEntropy(d.data(), logits.data(), targets.data(), 1, 3, 1.0f);
  // -log(e^-1 / (1 + e^-1)) = 1 + log(1 + e^-1)
  EXPECT_NEAR(got.loss_sum, 1.0 + std::log1p(std::exp(-1.0)), 1e-6);
  for (float x : d) EXPECT_TRUE(std::isfinite(x));
  EXPECT_NEAR(d[0] + d[1] + d[2], 0.0f, 1e-6f);
}

TEST(SoftmaxXentTest, EmptyBatch) {
  const XentSum got = SoftmaxCrossEntropy<float>(nullptr, nullptr, nullptr, 0, 3, 1.0f);
  EXPECT_EQ(got.loss_sum, 0.0);
  EXPECT_EQ(got.count, 0);
}

// Points spread over both signs, avoiding 0 where ReLU has its kink.
std::vector<double> ActivationInputs() {
  std::vector<double> x;
  for (int i = -40; i <= 40; ++i) x.push_back(0.1 * i + 0.013);
  return x;
}

template <typename Forward, typename Backward>
void CheckAgainstFiniteDifferences(Forward forward, Backward backward) {
  const std::vector<double> x = ActivationInputs();
  const int64_t n = static_cast<int64_t>(x.size());
  const std::vector<double> dout = RandomVector<double>(n, 51);
  // Accumulates onto a nonzero start.
  std::vector<double> dinp(n, 0.5);
  backward(dinp.data(), x.data(), dout.data(), n);
  constexpr double kEps = 1e-6;
  for (int64_t i = 0; i < n; ++i) {
    double plus = x[i] + kEps, minus = x[i] - kEps, y_plus, y_minus;
    forward(&y_plus, &plus, 1);
    forward(&y_minus, &minus, 1);
    const double fd = (y_plus - y_minus) / (2 * kEps);
    EXPECT_NEAR(dinp[i], 0.5 + fd * dout[i], 1e-8) << "x = " << x[i];
  }
}

TEST(GeluTest, ForwardMatchesTanhFormula) {
  const std::vector<double> x = ActivationInputs();
  std::vector<double> y(x.size());
  GeluForward(y.data(), x.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want =
        0.5 * x[i] * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x[i] + 0.044715 * std::pow(x[i], 3))));
    EXPECT_NEAR(y[i], want, 1e-15);
  }
  // Close to the exact GELU x * Phi(x) everywhere (the approximation's error is ~1e-3).
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(y[i], 0.5 * x[i] * std::erfc(-x[i] / std::sqrt(2.0)), 1e-3);
  }
}

TEST(GeluTest, BackwardMatchesFiniteDifferences) {
  CheckAgainstFiniteDifferences(GeluForward<double>, GeluBackward<double>);
}

// The float path evaluates tanh with a rational function (fast_tanh.h, within 3.3e-7 of tanh);
// it must agree with the double path (std::tanh) everywhere, including far into both tails.
// The forward to float precision. The backward's 1 - tanh(u)^2 turns tanh's absolute error into
// a relative one where |u| is large, scaled by x du/dx (below 10 where it is not yet 0): 4e-6.
TEST(GeluTest, FloatMatchesDoubleAcrossRange) {
  std::vector<double> x;
  for (int i = -2000; i <= 2000; ++i) x.push_back(0.05 * i + 0.0123);
  const int64_t n = static_cast<int64_t>(x.size());
  const std::vector<float> xf(x.begin(), x.end());
  const std::vector<double> xd(xf.begin(), xf.end());  // the same inputs, exactly
  const std::vector<double> dout = RandomVector<double>(n, 61);
  const std::vector<float> dout_f(dout.begin(), dout.end());
  const std::vector<double> dout_d(dout_f.begin(), dout_f.end());
  std::vector<double> yd(n), dd(n, 0.0);
  std::vector<float> yf(n), df(n, 0.0f);
  GeluForward(yd.data(), xd.data(), n);
  GeluForward(yf.data(), xf.data(), n);
  GeluBackward(dd.data(), xd.data(), dout_d.data(), n);
  GeluBackward(df.data(), xf.data(), dout_f.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(yf[i], yd[i], 1e-6 * (1.0 + std::abs(yd[i]))) << "x = " << xd[i];
    EXPECT_NEAR(df[i], dd[i], 4e-6 * std::abs(dout_d[i]) + 1e-6 * std::abs(dd[i])) << "x = " << xd[i];
  }
}

TEST(ReluTest, BackwardMatchesFiniteDifferences) {
  CheckAgainstFiniteDifferences(ReluForward<double>, ReluBackward<double>);
}

TEST(ReluTest, Forward) {
  const std::vector<float> x = {-2.0f, -0.0f, 0.0f, 3.0f};
  std::vector<float> y(4);
  ReluForward(y.data(), x.data(), 4);
  EXPECT_EQ(y, (std::vector<float>{0.0f, 0.0f, 0.0f, 3.0f}));
}

}  // namespace
}  // namespace gradsync::kernels::cpu

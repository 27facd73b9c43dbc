// LayerNorm and RMSNorm: forward against the direct formula, backward (which accumulates) against
// central finite differences in double, on ragged shapes.
#include <cmath>
#include <cstdint>
#include <vector>

#include "grad_check.h"
#include "gradsync/kernels/cpu/layernorm.h"
#include "gradsync/kernels/cpu/rmsnorm.h"
#include "gtest/gtest.h"

namespace gradsync::kernels::cpu {
namespace {

using gradsync::testing::Added;
using gradsync::testing::ExpectGradsNear;
using gradsync::testing::NumericGrad;
using gradsync::testing::RandomDoubles;

struct Shape {
  int64_t n, c;
};
constexpr Shape kShapes[] = {{1, 1}, {6, 5}, {3, 8}, {2, 17}};
constexpr double kEps = 1e-5;

TEST(LayerNormTest, ForwardMatchesFormula) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(::testing::Message() << s.n << "x" << s.c);
    const std::vector<double> x = RandomDoubles(s.n * s.c, 1, 2.0), w = RandomDoubles(s.c, 2),
                              b = RandomDoubles(s.c, 3);
    std::vector<double> y(x.size(), 9.0), mean(s.n), rstd(s.n);
    LayerNormForward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), s.n, s.c, kEps);
    for (int64_t r = 0; r < s.n; ++r) {
      double mu = 0.0, var = 0.0;
      for (int64_t i = 0; i < s.c; ++i) mu += x[r * s.c + i] / s.c;
      for (int64_t i = 0; i < s.c; ++i) var += std::pow(x[r * s.c + i] - mu, 2) / s.c;
      EXPECT_NEAR(mean[r], mu, 1e-12);
      EXPECT_NEAR(rstd[r], 1.0 / std::sqrt(var + kEps), 1e-9);
      for (int64_t i = 0; i < s.c; ++i) {
        const double want = (x[r * s.c + i] - mu) / std::sqrt(var + kEps) * w[i] + b[i];
        EXPECT_NEAR(y[r * s.c + i], want, 1e-9);
      }
    }
  }
}

TEST(LayerNormTest, BackwardMatchesFiniteDifferences) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(::testing::Message() << s.n << "x" << s.c);
    std::vector<double> x = RandomDoubles(s.n * s.c, 11, 2.0), w = RandomDoubles(s.c, 12), b = RandomDoubles(s.c, 13);
    const std::vector<double> dout = RandomDoubles(x.size(), 14);
    auto forward = [&] {
      std::vector<double> y(x.size()), mean(s.n), rstd(s.n);
      LayerNormForward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), s.n, s.c, kEps);
      return y;
    };
    std::vector<double> y(x.size()), mean(s.n), rstd(s.n);
    LayerNormForward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), s.n, s.c, kEps);
    // Nonzero starting gradients: the kernel must add to them.
    const std::vector<double> dx0 = RandomDoubles(x.size(), 15), dw0 = RandomDoubles(s.c, 16),
                              db0 = RandomDoubles(s.c, 17);
    std::vector<double> dx = dx0, dw = dw0, db = db0;
    LayerNormBackward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(), rstd.data(), s.n,
                      s.c);
    ExpectGradsNear(Added(dx, dx0), NumericGrad(forward, x, dout), "dinp");
    ExpectGradsNear(Added(dw, dw0), NumericGrad(forward, w, dout), "dweight");
    ExpectGradsNear(Added(db, db0), NumericGrad(forward, b, dout), "dbias");
  }
}

TEST(RmsNormTest, ForwardMatchesFormula) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(::testing::Message() << s.n << "x" << s.c);
    const std::vector<double> x = RandomDoubles(s.n * s.c, 21), w = RandomDoubles(s.c, 22);
    std::vector<double> y(x.size(), 9.0), rstd(s.n);
    RmsNormForward(y.data(), rstd.data(), x.data(), w.data(), s.n, s.c, kEps);
    for (int64_t r = 0; r < s.n; ++r) {
      double ms = 0.0;
      for (int64_t i = 0; i < s.c; ++i) ms += x[r * s.c + i] * x[r * s.c + i] / s.c;
      EXPECT_NEAR(rstd[r], 1.0 / std::sqrt(ms + kEps), 1e-9);
      for (int64_t i = 0; i < s.c; ++i) {
        EXPECT_NEAR(y[r * s.c + i], x[r * s.c + i] / std::sqrt(ms + kEps) * w[i], 1e-9);
      }
    }
  }
}

TEST(RmsNormTest, BackwardMatchesFiniteDifferences) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(::testing::Message() << s.n << "x" << s.c);
    std::vector<double> x = RandomDoubles(s.n * s.c, 31), w = RandomDoubles(s.c, 32);
    const std::vector<double> dout = RandomDoubles(x.size(), 33);
    auto forward = [&] {
      std::vector<double> y(x.size()), rstd(s.n);
      RmsNormForward(y.data(), rstd.data(), x.data(), w.data(), s.n, s.c, kEps);
      return y;
    };
    std::vector<double> y(x.size()), rstd(s.n);
    RmsNormForward(y.data(), rstd.data(), x.data(), w.data(), s.n, s.c, kEps);
    const std::vector<double> dx0 = RandomDoubles(x.size(), 34), dw0 = RandomDoubles(s.c, 35);
    std::vector<double> dx = dx0, dw = dw0;
    RmsNormBackward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), s.n, s.c);
    ExpectGradsNear(Added(dx, dx0), NumericGrad(forward, x, dout), "dinp");
    ExpectGradsNear(Added(dw, dw0), NumericGrad(forward, w, dout), "dweight");
  }
}

TEST(NormTest, FloatMatchesDouble) {
  const Shape s{4, 33};
  const std::vector<double> xd = RandomDoubles(s.n * s.c, 41, 3.0), wd = RandomDoubles(s.c, 42),
                            bd = RandomDoubles(s.c, 43);
  const std::vector<float> xf(xd.begin(), xd.end()), wf(wd.begin(), wd.end()), bf(bd.begin(), bd.end());
  std::vector<double> yd(xd.size()), md(s.n), rd(s.n);
  std::vector<float> yf(xd.size()), mf(s.n), rf(s.n);
  LayerNormForward(yd.data(), md.data(), rd.data(), xd.data(), wd.data(), bd.data(), s.n, s.c, kEps);
  LayerNormForward(yf.data(), mf.data(), rf.data(), xf.data(), wf.data(), bf.data(), s.n, s.c, kEps);
  for (size_t i = 0; i < yd.size(); ++i) EXPECT_NEAR(yf[i], yd[i], 1e-5 * (1 + std::abs(yd[i])));
  RmsNormForward(yd.data(), rd.data(), xd.data(), wd.data(), s.n, s.c, kEps);
  RmsNormForward(yf.data(), rf.data(), xf.data(), wf.data(), s.n, s.c, kEps);
  for (size_t i = 0; i < yd.size(); ++i) EXPECT_NEAR(yf[i], yd[i], 1e-5 * (1 + std::abs(yd[i])));
}

}  // namespace
}  // namespace gradsync::kernels::cpu

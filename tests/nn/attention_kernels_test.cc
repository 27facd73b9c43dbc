// Causal grouped-query attention and rotary embeddings: forward against direct formulas,
// backward against central finite differences in double, causality.
#include <cmath>
#include <cstdint>
#include <vector>

#include "grad_check.h"
#include "gradsync/kernels/cpu/attention.h"
#include "gradsync/kernels/cpu/rope.h"
#include "gtest/gtest.h"

namespace gradsync::kernels::cpu {
namespace {

using gradsync::testing::Added;
using gradsync::testing::ExpectGradsNear;
using gradsync::testing::NumericGrad;
using gradsync::testing::RandomDoubles;

constexpr AttentionShape kShapes[] = {
    {2, 3, 2, 1, 3},  // B 2, T 3, H 2, KVH 1, D 3
    {1, 5, 4, 2, 2},
    {2, 4, 3, 3, 5},  // plain multi-head
    {1, 1, 2, 1, 4},  // a single position
    // Longer than one query block of the kernel (64 rows), whole and ragged.
    {1, 128, 2, 1, 2},
    {2, 67, 3, 1, 4},
};

std::string Name(const AttentionShape& s) {
  return ::testing::PrintToString(std::vector<int64_t>{s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim});
}

// The textbook formula, one (b, h, i) at a time.
std::vector<double> NaiveAttention(const std::vector<double>& qkv, const AttentionShape& s) {
  const int64_t r = s.qkv_width(), c = s.out_width(), d = s.head_dim;
  std::vector<double> out(s.batch * s.seq_len * c, 0.0);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t g = h / (s.heads / s.kv_heads);
      for (int64_t i = 0; i < s.seq_len; ++i) {
        const double* q = &qkv[(b * s.seq_len + i) * r + h * d];
        std::vector<double> w(i + 1);
        double sum = 0.0;
        for (int64_t j = 0; j <= i; ++j) {
          const double* k = &qkv[(b * s.seq_len + j) * r + (s.heads + g) * d];
          double dot = 0.0;
          for (int64_t e = 0; e < d; ++e) dot += q[e] * k[e];
          w[j] = std::exp(dot / std::sqrt(static_cast<double>(d)));
          sum += w[j];
        }
        for (int64_t j = 0; j <= i; ++j) {
          const double* v = &qkv[(b * s.seq_len + j) * r + (s.heads + s.kv_heads + g) * d];
          for (int64_t e = 0; e < d; ++e) {
            out[(b * s.seq_len + i) * c + h * d + e] += w[j] / sum * v[e];
          }
        }
      }
    }
  }
  return out;
}

std::vector<double> Forward(const std::vector<double>& qkv, const AttentionShape& s,
                            std::vector<double>* att = nullptr) {
  std::vector<double> out(s.batch * s.seq_len * s.out_width(), 7.0);
  std::vector<double> local(s.batch * s.heads * s.seq_len * s.seq_len, 7.0);
  std::vector<double>& a = att == nullptr ? local : *att;
  a.assign(local.size(), 7.0);
  AttentionForward(out.data(), a.data(), qkv.data(), s);
  return out;
}

TEST(AttentionTest, ForwardMatchesDirectFormula) {
  for (const AttentionShape& s : kShapes) {
    SCOPED_TRACE(Name(s));
    const std::vector<double> qkv = RandomDoubles(s.batch * s.seq_len * s.qkv_width(), 1);
    std::vector<double> att;
    const std::vector<double> out = Forward(qkv, s, &att);
    const std::vector<double> want = NaiveAttention(qkv, s);
    for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], want[i], 1e-12) << i;
    // Probabilities: rows sum to 1, zero above the diagonal.
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
      for (int64_t i = 0; i < s.seq_len; ++i) {
        double sum = 0.0;
        for (int64_t j = 0; j < s.seq_len; ++j) {
          const double p = att[(bh * s.seq_len + i) * s.seq_len + j];
          if (j > i) {
            EXPECT_EQ(p, 0.0);
          }
          sum += p;
        }
        EXPECT_NEAR(sum, 1.0, 1e-12);
      }
    }
  }
}

TEST(AttentionTest, FloatMatchesDouble) {
  const AttentionShape s{2, 100, 4, 2, 8};
  const std::vector<double> qkv = RandomDoubles(s.batch * s.seq_len * s.qkv_width(), 3, 2.0);
  const std::vector<double> want = Forward(qkv, s);
  const std::vector<float> qkv_f(qkv.begin(), qkv.end());
  std::vector<float> out(want.size()), att(s.batch * s.heads * s.seq_len * s.seq_len);
  AttentionForward(out.data(), att.data(), qkv_f.data(), s);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], want[i], 1e-5) << i;
}

TEST(AttentionTest, BackwardMatchesFiniteDifferences) {
  for (const AttentionShape& s : kShapes) {
    SCOPED_TRACE(Name(s));
    std::vector<double> qkv = RandomDoubles(s.batch * s.seq_len * s.qkv_width(), 11);
    const std::vector<double> dout = RandomDoubles(s.batch * s.seq_len * s.out_width(), 12);
    std::vector<double> att;
    Forward(qkv, s, &att);
    const std::vector<double> dqkv0 = RandomDoubles(qkv.size(), 13);
    std::vector<double> dqkv = dqkv0, scratch(s.seq_len * s.seq_len, 5.0);
    AttentionBackward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), s);
    ExpectGradsNear(Added(dqkv, dqkv0), NumericGrad([&] { return Forward(qkv, s); }, qkv, dout), "dqkv");
  }
}

TEST(AttentionTest, LaterTokensDoNotChangeEarlierOutputs) {
  const AttentionShape s{2, 80, 4, 2, 4};
  const int64_t r = s.qkv_width(), c = s.out_width();
  std::vector<float> qkv(s.batch * s.seq_len * r);
  const std::vector<double> init = RandomDoubles(qkv.size(), 21);
  qkv.assign(init.begin(), init.end());
  std::vector<float> out(s.batch * s.seq_len * c), att(s.batch * s.heads * s.seq_len * s.seq_len);
  AttentionForward(out.data(), att.data(), qkv.data(), s);
  constexpr int64_t kChanged = 70;  // in the second query block
  std::vector<float> qkv2 = qkv;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t e = 0; e < r; ++e) qkv2[(b * s.seq_len + kChanged) * r + e] += 1.5f;
  }
  std::vector<float> out2(out.size()), att2(att.size());
  AttentionForward(out2.data(), att2.data(), qkv2.data(), s);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t t = 0; t < s.seq_len; ++t) {
      bool same = true;
      for (int64_t e = 0; e < c; ++e) {
        same = same && out[(b * s.seq_len + t) * c + e] == out2[(b * s.seq_len + t) * c + e];
      }
      // Bitwise equal before the changed position, different from it on.
      EXPECT_EQ(same, t < kChanged) << "b " << b << " t " << t;
    }
  }
}

TEST(RopeTest, TablesAndForwardMatchRotation) {
  constexpr int64_t kB = 2, kT = 3, kHeads = 3, kD = 4, kStride = 5 * kD;
  constexpr double kTheta = 100.0;
  std::vector<double> cos(kT * kD / 2), sin(kT * kD / 2);
  RopeTables(cos.data(), sin.data(), kT, kD, kTheta);
  for (int64_t t = 0; t < kT; ++t) {
    for (int64_t i = 0; i < kD / 2; ++i) {
      const double angle = t * std::pow(kTheta, -2.0 * i / kD);
      EXPECT_NEAR(cos[t * kD / 2 + i], std::cos(angle), 1e-15);
      EXPECT_NEAR(sin[t * kD / 2 + i], std::sin(angle), 1e-15);
    }
  }
  const std::vector<double> x = RandomDoubles(kB * kT * kStride, 31);
  std::vector<double> y = x;
  RopeForward(y.data(), cos.data(), sin.data(), kB, kT, kHeads, kD, kStride);
  for (int64_t row = 0; row < kB * kT; ++row) {
    const int64_t t = row % kT;
    for (int64_t e = kHeads * kD; e < kStride; ++e) {
      EXPECT_EQ(y[row * kStride + e], x[row * kStride + e]) << "past the rotated heads";
    }
    for (int64_t h = 0; h < kHeads; ++h) {
      for (int64_t i = 0; i < kD / 2; ++i) {
        // (x_i + i x_{i+h}) * e^{i angle}
        const int64_t at = row * kStride + h * kD + i;
        const double angle = t * std::pow(kTheta, -2.0 * i / kD);
        EXPECT_NEAR(y[at], x[at] * std::cos(angle) - x[at + kD / 2] * std::sin(angle), 1e-14);
        EXPECT_NEAR(y[at + kD / 2], x[at + kD / 2] * std::cos(angle) + x[at] * std::sin(angle), 1e-14);
      }
    }
  }
}

TEST(RopeTest, BackwardMatchesFiniteDifferencesAndInvertsForward) {
  constexpr int64_t kB = 2, kT = 3, kHeads = 2, kD = 6, kStride = 3 * kD;
  std::vector<double> cos(kT * kD / 2), sin(kT * kD / 2);
  RopeTables(cos.data(), sin.data(), kT, kD, 10000.0);
  std::vector<double> x = RandomDoubles(kB * kT * kStride, 41);
  const std::vector<double> dout = RandomDoubles(x.size(), 42);
  auto forward = [&] {
    std::vector<double> y = x;
    RopeForward(y.data(), cos.data(), sin.data(), kB, kT, kHeads, kD, kStride);
    return y;
  };
  std::vector<double> dx = dout;
  RopeBackward(dx.data(), cos.data(), sin.data(), kB, kT, kHeads, kD, kStride);
  ExpectGradsNear(dx, NumericGrad(forward, x, dout), "dx");
  std::vector<double> round_trip = forward();
  RopeBackward(round_trip.data(), cos.data(), sin.data(), kB, kT, kHeads, kD, kStride);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(round_trip[i], x[i], 1e-14);
}

}  // namespace
}  // namespace gradsync::kernels::cpu

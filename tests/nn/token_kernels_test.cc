// The encoder (token + position embeddings), SwiGLU and the residual add: forward against the
// formula, backward against central finite differences in double.
#include <cmath>
#include <cstdint>
#include <vector>

#include "grad_check.h"
#include "gradsync/kernels/cpu/encoder.h"
#include "gradsync/kernels/cpu/residual.h"
#include "gradsync/kernels/cpu/swiglu.h"
#include "gtest/gtest.h"

namespace gradsync::kernels::cpu {
namespace {

using gradsync::testing::Added;
using gradsync::testing::ExpectGradsNear;
using gradsync::testing::NumericGrad;
using gradsync::testing::RandomDoubles;

constexpr int64_t kB = 2, kT = 3, kC = 5, kV = 4, kMaxT = 4;
// Token 1 repeats (within and across sequences) so that rows of dwte accumulate.
const std::vector<int32_t> kTokens = {1, 3, 1, 0, 1, 2};

TEST(EncoderTest, ForwardAddsTokenAndPositionRows) {
  const std::vector<double> wte = RandomDoubles(kV * kC, 1), wpe = RandomDoubles(kMaxT * kC, 2);
  std::vector<double> out(kB * kT * kC, 9.0), no_pos(out.size(), 9.0);
  EncoderForward(out.data(), kTokens.data(), wte.data(), wpe.data(), kB, kT, kC);
  EncoderForward<double>(no_pos.data(), kTokens.data(), wte.data(), nullptr, kB, kT, kC);
  for (int64_t row = 0; row < kB * kT; ++row) {
    for (int64_t c = 0; c < kC; ++c) {
      const double e = wte[kTokens[row] * kC + c];
      EXPECT_EQ(out[row * kC + c], e + wpe[(row % kT) * kC + c]);
      EXPECT_EQ(no_pos[row * kC + c], e);
    }
  }
}

TEST(EncoderTest, BackwardMatchesFiniteDifferences) {
  std::vector<double> wte = RandomDoubles(kV * kC, 11), wpe = RandomDoubles(kMaxT * kC, 12);
  const std::vector<double> dout = RandomDoubles(kB * kT * kC, 13);
  for (bool positions : {true, false}) {
    SCOPED_TRACE(positions ? "gpt2" : "llama");
    auto forward = [&] {
      std::vector<double> out(kB * kT * kC);
      EncoderForward(out.data(), kTokens.data(), wte.data(), positions ? wpe.data() : nullptr, kB, kT, kC);
      return out;
    };
    const std::vector<double> dwte0 = RandomDoubles(wte.size(), 14), dwpe0 = RandomDoubles(wpe.size(), 15);
    std::vector<double> dwte = dwte0, dwpe = dwpe0;
    EncoderBackward(dwte.data(), positions ? dwpe.data() : nullptr, dout.data(), kTokens.data(), kB, kT, kC);
    ExpectGradsNear(Added(dwte, dwte0), NumericGrad(forward, wte, dout), "dwte");
    ExpectGradsNear(Added(dwpe, dwpe0), NumericGrad(forward, wpe, dout), "dwpe");
  }
}

TEST(SwiGluTest, ForwardMatchesFormula) {
  constexpr int64_t kN = 3, kM = 4;
  const std::vector<double> inp = RandomDoubles(kN * 2 * kM, 21, 2.0);
  std::vector<double> out(kN * kM, 9.0);
  SwiGluForward(out.data(), inp.data(), kN, kM);
  for (int64_t r = 0; r < kN; ++r) {
    for (int64_t i = 0; i < kM; ++i) {
      const double g = inp[r * 2 * kM + i], u = inp[r * 2 * kM + kM + i];
      EXPECT_NEAR(out[r * kM + i], g / (1.0 + std::exp(-g)) * u, 1e-15);
    }
  }
}

TEST(SwiGluTest, BackwardMatchesFiniteDifferences) {
  constexpr int64_t kN = 3, kM = 5;
  std::vector<double> inp = RandomDoubles(kN * 2 * kM, 31, 2.0);
  const std::vector<double> dout = RandomDoubles(kN * kM, 32);
  auto forward = [&] {
    std::vector<double> out(kN * kM);
    SwiGluForward(out.data(), inp.data(), kN, kM);
    return out;
  };
  const std::vector<double> dinp0 = RandomDoubles(inp.size(), 33);
  std::vector<double> dinp = dinp0;
  SwiGluBackward(dinp.data(), inp.data(), dout.data(), kN, kM);
  ExpectGradsNear(Added(dinp, dinp0), NumericGrad(forward, inp, dout), "dinp");
}

TEST(SwiGluTest, FloatMatchesDoubleAcrossRange) {
  constexpr int64_t kM = 1001;
  std::vector<float> inp(2 * kM);
  for (int64_t i = 0; i < kM; ++i) {
    inp[i] = 0.2f * static_cast<float>(i - kM / 2) + 0.013f;  // gate from -100 to 100
    inp[kM + i] = 1.5f - 0.002f * static_cast<float>(i);      // up
  }
  const std::vector<double> inp_d(inp.begin(), inp.end());
  const std::vector<double> dout = RandomDoubles(kM, 41);
  const std::vector<float> dout_f(dout.begin(), dout.end());
  const std::vector<double> dout_d(dout_f.begin(), dout_f.end());
  std::vector<float> out(kM), dinp(2 * kM, 0.0f);
  std::vector<double> out_d(kM), dinp_d(2 * kM, 0.0);
  SwiGluForward(out.data(), inp.data(), 1, kM);
  SwiGluForward(out_d.data(), inp_d.data(), 1, kM);
  SwiGluBackward(dinp.data(), inp.data(), dout_f.data(), 1, kM);
  SwiGluBackward(dinp_d.data(), inp_d.data(), dout_d.data(), 1, kM);
  for (int64_t i = 0; i < kM; ++i) {
    EXPECT_NEAR(out[i], out_d[i], 1e-6 * (1.0 + std::abs(out_d[i]))) << i;
  }
  for (int64_t i = 0; i < 2 * kM; ++i) {
    EXPECT_NEAR(dinp[i], dinp_d[i], 1e-6 * (1.0 + std::abs(dinp_d[i]))) << i;
  }
}

TEST(ResidualTest, AddsInPlace) {
  std::vector<float> a = {1.0f, 2.0f, -3.0f};
  const std::vector<float> b = {0.5f, -2.0f, 4.0f};
  ResidualForward(a.data(), a.data(), b.data(), 3);
  EXPECT_EQ(a, (std::vector<float>{1.5f, 0.0f, 1.0f}));
}

}  // namespace
}  // namespace gradsync::kernels::cpu

// The CPU reference of one attention case for the CUDA attention tests: random qkv (spread wide
// enough that the softmax is far from uniform), dout and a starting dqkv, rounded to T, and
// kernels/cpu/attention.h's output, probabilities and accumulated dqkv on them; the softmax
// statistics (lse) from their definition.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gradsync/kernels/cpu/attention.h"
#include "gradsync/kernels/cuda/attention.cuh"
#include "test_util.h"

namespace gradsync::kernels::cuda::testing {

struct AttentionCase {
  std::vector<float> qkv, dout, dqkv0;  // inputs
  std::vector<float> out, probs, dqkv;  // the CPU's results (dqkv = dqkv0 + gradient)
};

// With zero_start, dqkv0 is all zeros and dqkv the bare gradient: what an overwriting backward
// (GradMode::kOverwrite) must produce whatever dqkv held.
template <typename T>
AttentionCase MakeAttentionCase(const AttentionShape& s, uint32_t seed, bool zero_start = false) {
  AttentionCase c;
  const int64_t qkv_n = s.batch * s.seq_len * s.qkv_width(), out_n = s.batch * s.seq_len * s.out_width();
  c.qkv = Random<T>(qkv_n, seed, -2.0f, 2.0f);
  c.dout = Random<T>(out_n, seed + 1);
  c.dqkv0 = zero_start ? std::vector<float>(qkv_n, 0.0f) : Random<T>(qkv_n, seed + 2);
  c.out.resize(out_n);
  c.probs.resize(s.batch * s.heads * s.seq_len * s.seq_len);
  cpu::AttentionForward(c.out.data(), c.probs.data(), c.qkv.data(), s);
  c.dqkv = c.dqkv0;
  std::vector<float> scratch(s.seq_len * s.seq_len);
  cpu::AttentionBackward(c.dqkv.data(), scratch.data(), c.dout.data(), c.qkv.data(), c.probs.data(), s);
  return c;
}

// log sum_{j <= i} exp(q_i . k_j / sqrt(D)) in double, straight from the definition.
inline std::vector<float> ReferenceLse(const std::vector<float>& qkv, const AttentionShape& s) {
  std::vector<float> lse(s.batch * s.heads * s.seq_len);
  const int64_t row = s.qkv_width(), d = s.head_dim;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t g = h / (s.heads / s.kv_heads);
      for (int64_t i = 0; i < s.seq_len; ++i) {
        const float* q = qkv.data() + (b * s.seq_len + i) * row + h * d;
        std::vector<double> scores(i + 1);
        double max = -INFINITY;
        for (int64_t j = 0; j <= i; ++j) {
          const float* k = qkv.data() + (b * s.seq_len + j) * row + (s.heads + g) * d;
          double dot = 0.0;
          for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(q[c]) * k[c];
          scores[j] = dot / std::sqrt(static_cast<double>(d));
          max = std::max(max, scores[j]);
        }
        double sum = 0.0;
        for (const double sc : scores) sum += std::exp(sc - max);
        lse[(b * s.heads + h) * s.seq_len + i] = static_cast<float>(max + std::log(sum));
      }
    }
  }
  return lse;
}

// What the tensor-core kernels (flash_attention.cuh) return for one case, as floats.
struct FlashResults {
  std::vector<float> out, lse, delta, dqkv;
};

// The flash kernels' results against the CPU's: out and dqkv to two bf16 roundings (P rounds to
// bf16 before it multiplies v and the output rounds again; the backward rounds P and dS, and
// dqkv once as the gradient adds into it, as attention_gemm_test), lse and delta = dout . out
// (with the kernel's own bf16 out) to fp32 summation order.
inline void ExpectFlashMatchesCpu(const AttentionShape& s, const AttentionCase& c, const FlashResults& r) {
  const Tolerance two_roundings{2e-2, 4e-2, 2e-2}, fp32_sums{1e-5, 1e-4, 1e-4};
  EXPECT_TRUE(Close(r.out, c.out, two_roundings, "out"));
  EXPECT_TRUE(Close(r.lse, ReferenceLse(c.qkv, s), fp32_sums, "lse"));
  EXPECT_TRUE(Close(r.dqkv, c.dqkv, two_roundings, "dqkv"));
  std::vector<float> want_delta(r.delta.size());
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t t = 0; t < s.seq_len; ++t) {
        double sum = 0;
        const int64_t at = (b * s.seq_len + t) * s.out_width() + h * s.head_dim;
        for (int64_t d = 0; d < s.head_dim; ++d) sum += static_cast<double>(c.dout[at + d]) * r.out[at + d];
        want_delta[(b * s.heads + h) * s.seq_len + t] = static_cast<float>(sum);
      }
    }
  }
  EXPECT_TRUE(Close(r.delta, want_delta, fp32_sums, "delta"));
}

}  // namespace gradsync::kernels::cuda::testing

// The CPU reference of one attention case for the CUDA attention tests: random qkv (spread wide
// enough that the softmax is far from uniform), dout and a starting dqkv, rounded to T, and
// kernels/cpu/attention.h's output, probabilities and accumulated dqkv on them.
#pragma once

#include <cstdint>
#include <vector>

#include "gradsync/kernels/cpu/attention.h"
#include "gradsync/kernels/cuda/attention.cuh"
#include "test_util.h"

namespace gradsync::kernels::cuda::testing {

struct AttentionCase {
  std::vector<float> qkv, dout, dqkv0;       // inputs
  std::vector<float> out, probs, dqkv;       // the CPU's results (dqkv = dqkv0 + gradient)
};

template <typename T>
AttentionCase MakeAttentionCase(const AttentionShape& s, uint32_t seed) {
  AttentionCase c;
  const int64_t qkv_n = s.batch * s.seq_len * s.qkv_width(), out_n = s.batch * s.seq_len * s.out_width();
  c.qkv = Random<T>(qkv_n, seed, -2.0f, 2.0f);
  c.dout = Random<T>(out_n, seed + 1);
  c.dqkv0 = Random<T>(qkv_n, seed + 2);
  const cpu::AttentionShape cs{s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim};
  c.out.resize(out_n);
  c.probs.resize(s.batch * s.heads * s.seq_len * s.seq_len);
  cpu::AttentionForward(c.out.data(), c.probs.data(), c.qkv.data(), cs);
  c.dqkv = c.dqkv0;
  std::vector<float> scratch(s.seq_len * s.seq_len);
  cpu::AttentionBackward(c.dqkv.data(), scratch.data(), c.dout.data(), c.qkv.data(), c.probs.data(), cs);
  return c;
}

}  // namespace gradsync::kernels::cuda::testing

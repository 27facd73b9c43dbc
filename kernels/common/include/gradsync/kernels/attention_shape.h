// The shape of one causal grouped-query attention call, shared by kernels/cpu/attention.h and
// kernels/cuda's attention launchers (attention.cuh, attention_gemm.cuh, flash_attention.cuh).
//
// qkv [B, T, (H + 2 KVH) D] holds per (b, t) the H query heads, then the KVH key heads, then the
// KVH value heads, each D wide; query head h reads key/value head h / (H / KVH). out [B, T, H D]
// holds the heads side by side. Each backend states which values it accepts.
#pragma once

#include <cstdint>

namespace gradsync::kernels {

struct AttentionShape {
  int64_t batch = 0;     // B
  int64_t seq_len = 0;   // T
  int64_t heads = 0;     // H
  int64_t kv_heads = 0;  // KVH
  int64_t head_dim = 0;  // D

  int64_t qkv_width() const { return (heads + 2 * kv_heads) * head_dim; }
  int64_t out_width() const { return heads * head_dim; }
};

}  // namespace gradsync::kernels

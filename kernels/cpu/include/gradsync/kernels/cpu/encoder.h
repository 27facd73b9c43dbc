// Token embedding, plus learned positions for the gpt2 flavour, over [B, T] tokens:
//
//   forward:  out[b, t, :]   = wte[tokens[b, t], :] + wpe[t, :]      (wpe term only if wpe != null)
//   backward: dwte[tok, :]  += dout[b, t, :]   for every (b, t) with tokens[b, t] = tok
//             dwpe[t, :]    += sum_b dout[b, t, :]
//
// wte is [V, C], wpe [T_max, C] (T <= T_max), out [B, T, C]. The backward adds rows in (b, t)
// order, so repeated tokens accumulate in a fixed order: deterministic.
// Preconditions: every token is in [0, V) (callers validate once per batch); buffers hold the
// elements their shapes say.
#pragma once

#include <cstdint>

namespace gradsync::kernels::cpu {

// Overwrites out. wpe may be null (no position embedding: llama flavour).
template <typename T>
void EncoderForward(T* out, const int32_t* tokens, const T* wte, const T* wpe, int64_t batch, int64_t seq_len,
                    int64_t channels);

// Accumulates into dwte and, when not null, dwpe.
template <typename T>
void EncoderBackward(T* dwte, T* dwpe, const T* dout, const int32_t* tokens, int64_t batch, int64_t seq_len,
                     int64_t channels);

}  // namespace gradsync::kernels::cpu

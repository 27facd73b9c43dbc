// SwiGLU gating of a fused [gate | up] projection (llama flavour's MLP), over N rows:
//
//   inp [N, 2M]: g = inp[:, :M], u = inp[:, M:]
//   s          = sigmoid(g) = 1 / (1 + exp(-g))
//   silu(g)    = g * s
//   out [N, M] = silu(g) * u
//   backward:  dg += dout * u * s * (1 + g * (1 - s))       (silu'(g) = s * (1 + g (1 - s)))
//              du += dout * silu(g)
//
// Preconditions: buffers hold the elements their shapes say; outputs do not alias inputs.
#pragma once

#include <cstdint>

namespace gradsync::kernels::cpu {

// Overwrites out.
template <typename T>
void SwiGluForward(T* out, const T* inp, int64_t n, int64_t m);

// Accumulates into dinp [n, 2m]. Takes the forward input.
template <typename T>
void SwiGluBackward(T* dinp, const T* inp, const T* dout, int64_t n, int64_t m);

}  // namespace gradsync::kernels::cpu

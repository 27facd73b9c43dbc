// GELU, tanh approximation (as in GPT-2 and llm.c), elementwise over n values:
//
//   u       = k * (x + c * x^3),   k = sqrt(2 / pi), c = 0.044715
//   y       = 0.5 * x * (1 + tanh(u))
//   dy / dx = 0.5 * (1 + tanh(u)) + 0.5 * x * (1 - tanh(u)^2) * k * (1 + 3 * c * x^2)
//
// Preconditions: buffers hold n elements; out may alias inp in the forward pass.
#pragma once

#include <cstdint>

namespace gradsync::kernels::cpu {

// out = gelu(inp) (overwrites out).
template <typename T>
void GeluForward(T* out, const T* inp, int64_t n);

// dinp += gelu'(inp) * dout. Takes the forward input, not its output.
template <typename T>
void GeluBackward(T* dinp, const T* inp, const T* dout, int64_t n);

}  // namespace gradsync::kernels::cpu

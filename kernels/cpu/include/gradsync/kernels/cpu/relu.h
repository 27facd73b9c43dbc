// ReLU, elementwise over n values:
//
//   y       = max(x, 0)
//   dy / dx = 1 if x > 0 else 0   (the subgradient at 0 is taken as 0)
//
// Preconditions: buffers hold n elements; out may alias inp in the forward pass.
#pragma once

#include <cstdint>

namespace gradsync::kernels::cpu {

// out = relu(inp) (overwrites out).
template <typename T>
void ReluForward(T* out, const T* inp, int64_t n);

// dinp += relu'(inp) * dout. Takes the forward input, not its output.
template <typename T>
void ReluBackward(T* dinp, const T* inp, const T* dout, int64_t n);

}  // namespace gradsync::kernels::cpu

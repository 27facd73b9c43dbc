// Residual connection, elementwise over n values:
//
//   forward:  out = a + b
//   backward: da += dout, db += dout      (the model usually lets dout flow on in place)
//
// Preconditions: buffers hold n elements; out may alias a or b.
#pragma once

#include <cstdint>

namespace gradsync::kernels::cpu {

// Overwrites out.
template <typename T>
void ResidualForward(T* out, const T* a, const T* b, int64_t n);

}  // namespace gradsync::kernels::cpu

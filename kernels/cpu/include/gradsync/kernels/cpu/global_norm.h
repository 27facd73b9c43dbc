// The squared L2 norm of a buffer and its in-place scaling: gradient clipping by global norm.
//
//   SumOfSquares(x) = sum_i x_i^2       accumulated in double, over 8 interleaved partial sums
//                                       combined in a fixed order: deterministic for a given n
//                                       (a rounding different from the sequential sum's)
//   Scale(x, s):      x_i *= s
#pragma once

#include <cstdint>

namespace gradsync::kernels::cpu {

double SumOfSquares(const float* x, int64_t n);
void Scale(float* x, int64_t n, float s);

}  // namespace gradsync::kernels::cpu

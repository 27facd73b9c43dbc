#include "gradsync/kernels/cpu/global_norm.h"

#include "clones.h"
#include "reduce.h"

namespace gradsync::kernels::cpu {

// One sequential double sum is a chain of dependent adds (4 cycles each); the interleaved partial
// sums of SumOf keep the vector units busy instead: measured 0.80 ms against 0.14 ms for
// gpt-tiny's 0.84M gradients.
GRADSYNC_CLONES double SumOfSquares(const float* x, int64_t n) {
  return internal::SumOf(n, [x](int64_t i) {
    const double v = x[i];
    return v * v;
  });
}

GRADSYNC_CLONES void Scale(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace gradsync::kernels::cpu

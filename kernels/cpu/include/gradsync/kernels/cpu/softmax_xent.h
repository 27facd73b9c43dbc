// Fused softmax + cross-entropy over rows of logits [N, V] with integer targets [N]:
//
//   m      = max_j z[j]                       (subtracted first so exp never overflows)
//   p[j]   = exp(z[j] - m) / sum_k exp(z[k] - m)
//   loss   = log(sum_k exp(z[k] - m)) - (z[t] - m)      = -log p[t]
//   dz[j]  = scale * (p[j] - [j == t])
//
// Rows whose target equals ignore_index add no loss, are not counted, and get dz = 0. The row
// sums run in double, so float logits lose no accuracy in the loss.
// Preconditions: logits hold n * v elements, v >= 1, each target is in [0, v) or equals
// ignore_index (not checked here: callers validate targets once per batch).
#pragma once

#include <cstdint>

namespace gradsync::kernels::cpu {

inline constexpr int32_t kIgnoreIndex = -1;

struct XentSum {
  double loss_sum = 0.0;  // sum of -log p[t] over the counted rows
  int64_t count = 0;      // rows whose target is not ignore_index
};

// Returns the loss sum and count. If dlogits is not null it is overwritten with the scaled
// gradient of the loss sum; it may alias logits (the gradient then replaces the logits).
template <typename T>
XentSum SoftmaxCrossEntropy(T* dlogits, const T* logits, const int32_t* targets, int64_t n, int64_t v, T scale,
                            int32_t ignore_index = kIgnoreIndex);

}  // namespace gradsync::kernels::cpu

#include "gradsync/kernels/cpu/softmax_xent.h"

#include <algorithm>
#include <cmath>

#include "fast_exp.h"

namespace gradsync::kernels::cpu {

template <typename T>
XentSum SoftmaxCrossEntropy(T* dlogits, const T* logits, const int32_t* targets, int64_t n,
                            int64_t v, T scale, int32_t ignore_index) {
  XentSum result;
  for (int64_t r = 0; r < n; ++r) {
    const T* z = logits + r * v;
    T* dz = dlogits == nullptr ? nullptr : dlogits + r * v;
    const int32_t target = targets[r];
    if (target == ignore_index) {
      if (dz != nullptr) std::fill_n(dz, v, T{0});
      continue;
    }
    // Each exp(z - max) lies in (0, 1]: in T's precision (internal::Exp), summed in double.
    const T max = *std::max_element(z, z + v);
    const double target_logit = static_cast<double>(z[target]) - static_cast<double>(max);
    double sum = 0.0;
    if (dz == nullptr) {
      for (int64_t j = 0; j < v; ++j) sum += internal::Exp(z[j] - max);
    } else {
      // One exp per element: it is parked in dz (read before written, so dz may alias z) and
      // normalised once the sum is known.
      for (int64_t j = 0; j < v; ++j) {
        const double e = internal::Exp(z[j] - max);
        sum += e;
        dz[j] = static_cast<T>(e);
      }
    }
    result.loss_sum += std::log(sum) - target_logit;
    ++result.count;
    if (dz == nullptr) continue;
    const double inv_sum = 1.0 / sum;
    for (int64_t j = 0; j < v; ++j) dz[j] = static_cast<T>(scale * (dz[j] * inv_sum));
    // The target's entry from its exact probability: p - 1 cancels when p is near 1.
    dz[target] = static_cast<T>(scale * (std::exp(target_logit) * inv_sum - 1.0));
  }
  return result;
}

template XentSum SoftmaxCrossEntropy<float>(float*, const float*, const int32_t*, int64_t, int64_t,
                                            float, int32_t);
template XentSum SoftmaxCrossEntropy<double>(double*, const double*, const int32_t*, int64_t,
                                             int64_t, double, int32_t);

}  // namespace gradsync::kernels::cpu

#include "gradsync/kernels/cpu/softmax_xent.h"

#include <algorithm>
#include <cmath>

#include "clones.h"
#include "fast_exp.h"
#include "reduce.h"

namespace gradsync::kernels::cpu {

template <typename T>
GRADSYNC_CLONES XentSum SoftmaxCrossEntropy(T* dlogits, const T* logits, const int32_t* targets, int64_t n, int64_t v,
                                            T scale, int32_t ignore_index) {
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
    // Written as separate loops (max, exp, sum, scale) so that each vectorises.
    const T max = internal::MaxOf(z, v);
    const double target_logit = static_cast<double>(z[target]) - static_cast<double>(max);
    double sum = 0.0;
    if (dz == nullptr) {
      sum = internal::SumOf(v, [z, max](int64_t j) { return internal::Exp(z[j] - max); });
    } else {
      // One exp per element, parked in dz (each read before written, so dz may alias z) and
      // normalised once the sum is known.
      for (int64_t j = 0; j < v; ++j) dz[j] = internal::Exp(z[j] - max);
      sum = internal::SumOf(v, [dz](int64_t j) { return dz[j]; });
    }
    result.loss_sum += std::log(sum) - target_logit;
    ++result.count;
    if (dz == nullptr) continue;
    const double inv_sum = 1.0 / sum;
    const T factor = static_cast<T>(static_cast<double>(scale) * inv_sum);
    for (int64_t j = 0; j < v; ++j) dz[j] *= factor;
    // The target's entry from its exact probability: p - 1 cancels when p is near 1.
    dz[target] = static_cast<T>(scale * (std::exp(target_logit) * inv_sum - 1.0));
  }
  return result;
}

template XentSum SoftmaxCrossEntropy<float>(float*, const float*, const int32_t*, int64_t, int64_t, float, int32_t);
template XentSum SoftmaxCrossEntropy<double>(double*, const double*, const int32_t*, int64_t, int64_t, double, int32_t);

}  // namespace gradsync::kernels::cpu

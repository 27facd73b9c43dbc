#include "gradsync/kernels/cpu/adamw.h"

#include <cmath>

#include "clones.h"

namespace gradsync::kernels::cpu {

GRADSYNC_CLONES
void AdamWUpdate(float* params, const float* grads, float* m, float* v, int64_t n, const AdamWHyper& hyper) {
  const double t = static_cast<double>(hyper.step);
  const float inv_bc1 = static_cast<float>(1.0 / (1.0 - std::pow(hyper.beta1, t)));
  const float inv_bc2 = static_cast<float>(1.0 / (1.0 - std::pow(hyper.beta2, t)));
  const float beta1 = static_cast<float>(hyper.beta1);
  const float beta2 = static_cast<float>(hyper.beta2);
  const float eps = static_cast<float>(hyper.eps);
  const float lr = static_cast<float>(hyper.lr);
  const float wd = hyper.decay ? static_cast<float>(hyper.weight_decay) : 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = grads[i];
    m[i] = beta1 * m[i] + (1.0f - beta1) * g;
    v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
    const float m_hat = m[i] * inv_bc1;
    const float v_hat = v[i] * inv_bc2;
    params[i] -= lr * (m_hat / (std::sqrt(v_hat) + eps) + wd * params[i]);
  }
}

}  // namespace gradsync::kernels::cpu

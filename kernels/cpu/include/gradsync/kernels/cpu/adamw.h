// AdamW (Loshchilov & Hutter) over a flat range of n parameters, at step t (1-based):
//
//   m     = beta1 * m + (1 - beta1) * g
//   v     = beta2 * v + (1 - beta2) * g^2
//   m_hat = m / (1 - beta1^t)
//   v_hat = v / (1 - beta2^t)
//   p     = p - lr * (m_hat / (sqrt(v_hat) + eps) + wd * p)      (wd term only if decay)
//
// The decay is decoupled: it shrinks p directly instead of being added to g, so it is not
// rescaled by the adaptive denominator. The bias corrections 1 - beta^t are computed in double
// (beta^t underflows slowly and loses digits in float for long runs); the per-element math is
// float. Elements are updated independently, in order: deterministic.
// Preconditions: every buffer holds n elements, t >= 1.
#pragma once

#include <cstdint>

#include "gradsync/kernels/adamw_hyper.h"

namespace gradsync::kernels::cpu {

// Updates params, m and v in place from grads.
void AdamWUpdate(float* params, const float* grads, float* m, float* v, int64_t n, const AdamWHyper& hyper);

}  // namespace gradsync::kernels::cpu

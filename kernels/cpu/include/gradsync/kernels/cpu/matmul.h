// Fully connected layer, llm.c layout: row-major activations [N, IC], weight [OC, IC].
//
//   forward:  out[n, o]   = sum_i inp[n, i] * w[o, i] + bias[o]
//   backward: dinp[n, i] += sum_o dout[n, o] * w[o, i]
//             dw[o, i]   += sum_n dout[n, o] * inp[n, i]
//             dbias[o]   += sum_n dout[n, o]
//
// The products run on BLAS (sgemm / dgemm); the bias sums are plain loops in row order.
// Preconditions (raw pointers, not checked): every buffer holds the elements its shape says,
// n, in_features, out_features >= 0, and outputs do not alias inputs. For a fixed BLAS build and
// thread count the results are deterministic.
#pragma once

#include <cstdint>

namespace gradsync::kernels::cpu {

// out = inp x w^T + bias (overwrites out). bias may be null (no bias).
template <typename T>
void MatmulForward(T* out, const T* inp, const T* weight, const T* bias, int64_t n, int64_t in_features,
                   int64_t out_features);

// Accumulates (+=) the gradients of MatmulForward given dout. Any of dinp, dweight and dbias may
// be null to skip that gradient (e.g. dinp of the first layer).
template <typename T>
void MatmulBackward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t n,
                    int64_t in_features, int64_t out_features);

}  // namespace gradsync::kernels::cpu

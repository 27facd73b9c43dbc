// Fused softmax + cross-entropy over rows of logits [N, V] with integer targets [N], as
// kernels/cpu/softmax_xent.h:
//
//   m      = max_j z[j]                       (subtracted first so exp never overflows)
//   p[j]   = exp(z[j] - m) / sum_k exp(z[k] - m)
//   loss   = log(sum_k exp(z[k] - m)) - (z[t] - m)      = -log p[t]
//   dz[j]  = scale * (p[j] - [j == t])
//
// Rows whose target equals ignore_index add no loss, are not counted, and get dz = 0. The caller
// turns the sum into a mean through `scale` (1 / count for a mean loss), exactly as on the CPU;
// the count is known on the host from the targets.
//
// Rows lie `stride` elements apart (0: v). A stride that is a multiple of 16 bytes, with aligned
// buffers, lets every thread move 16 bytes per load and store; other layouts take one element at
// a time. The columns past v are never read or written.
//
// A block per row: one pass keeps a running (max, sum) per thread (online softmax), the block
// combines them in a fixed tree order, and a second pass writes dz. fp32 arithmetic. dz may
// alias the logits: each element is read before its own thread overwrites it, and the target
// logit is read before the first barrier. Deterministic; XentLossSum adds the per-row losses in a
// fixed order (fp64), as the CPU's loss sum does.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace gradsync::kernels::cuda {

inline constexpr int32_t kXentIgnoreIndex = -1;

// Writes row_loss [n] (fp32; 0 for ignored rows, NaN for a target outside [0, v)) when not null,
// and, when dlogits is not null, overwrites it with the scaled gradient of the loss sum.
// T is float or __nv_bfloat16. INVALID_ARGUMENT for n < 0, v < 1, 0 < stride < v or a null
// logits/targets.
template <typename T>
absl::Status SoftmaxCrossEntropy(T* dlogits, float* row_loss, const T* logits, const int32_t* targets, int64_t n,
                                 int64_t v, float scale, int32_t ignore_index, cudaStream_t stream, int64_t stride = 0);

// loss_sum[0] = sum of row_loss over the rows whose target is not ignore_index (fp64, fixed order)
// and count[0] = the number of those rows, both written on the device (one block, no host
// synchronisation). INVALID_ARGUMENT for n < 0 or a null buffer.
absl::Status XentLossSum(double* loss_sum, int64_t* count, const float* row_loss, const int32_t* targets, int64_t n,
                         int32_t ignore_index, cudaStream_t stream);

}  // namespace gradsync::kernels::cuda

// SwiGLU gating of a fused [gate | up] projection (llama flavour's MLP), over N rows, as
// kernels/cpu/swiglu.h:
//
//   inp [N, 2M]: g = inp[:, :M], u = inp[:, M:]
//   s          = sigmoid(g) = 1 / (1 + exp(-g))
//   out [N, M] = g * s * u
//   backward:  dg += dout * u * s * (1 + g * (1 - s))       (silu'(g) = s * (1 + g (1 - s)))
//              du += dout * g * s
//
// 1 - s is computed as exp(-g) * s (no cancellation where s is near 1), exp's argument clamped to
// [-87, 87] as on the CPU. fp32 arithmetic; 16-byte accesses when M and the pointers allow.
// Deterministic.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "gradsync/kernels/cuda/grad_mode.h"

namespace gradsync::kernels::cuda {

// Overwrites out [n, m]. T is float or __nv_bfloat16. INVALID_ARGUMENT for n < 0, m < 0 or a null
// buffer; outputs must not alias inputs.
template <typename T>
absl::Status SwiGluForward(T* out, const T* inp, int64_t n, int64_t m, cudaStream_t stream);

// Accumulates into dinp [n, 2m] (writes it with GradMode::kOverwrite). Takes the forward input.
template <typename T>
absl::Status SwiGluBackward(T* dinp, const T* inp, const T* dout, int64_t n, int64_t m, cudaStream_t stream,
                            GradMode mode = GradMode::kAccumulate);

}  // namespace gradsync::kernels::cuda

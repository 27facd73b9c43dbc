// GELU, tanh approximation (as in GPT-2, llm.c and kernels/cpu/gelu.h), elementwise over n values:
//
//   u       = k * (x + c * x^3),   k = sqrt(2 / pi), c = 0.044715
//   y       = 0.5 * x * (1 + tanh(u))                 = x * sigmoid(2u)
//   dy / dx = 0.5 * (1 + tanh(u)) + 0.5 * x * (1 - tanh(u)^2) * k * (1 + 3 * c * x^2)
//
// Computed as the CPU reference does: 0.5 (1 + tanh(u)) = sigmoid(2u), which does not cancel where
// tanh(u) is near -1, and 1 - tanh(u)^2 = 4 s (1 - s); exp arguments are clamped to [-87, 87].
// fp32 arithmetic; 16-byte accesses when the pointers allow. Deterministic.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "gradsync/kernels/cuda/grad_mode.h"

namespace gradsync::kernels::cuda {

// out = gelu(inp) (overwrites out; out may alias inp). T is float or __nv_bfloat16.
// INVALID_ARGUMENT for n < 0 or a null buffer.
template <typename T>
absl::Status GeluForward(T* out, const T* inp, int64_t n, cudaStream_t stream);

// dinp += gelu'(inp) * dout (dinp = ... with GradMode::kOverwrite). Takes the forward input, not
// its output.
template <typename T>
absl::Status GeluBackward(T* dinp, const T* inp, const T* dout, int64_t n, cudaStream_t stream,
                          GradMode mode = GradMode::kAccumulate);

}  // namespace gradsync::kernels::cuda

// Residual connection, elementwise over n values (kernels/cpu/residual.h):
//
//   forward:  out = a + b
//   backward: da += dout, db += dout      (the model usually lets dout flow on in place)
//
// fp32 addition, one rounding into T; 16-byte accesses when the pointers allow. Deterministic.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace gradsync::kernels::cuda {

// Overwrites out; out may alias a or b. T is float or __nv_bfloat16. INVALID_ARGUMENT for n < 0 or
// a null buffer.
template <typename T>
absl::Status ResidualForward(T* out, const T* a, const T* b, int64_t n, cudaStream_t stream);

// dst += src: the backward of a residual branch that does not reuse dout in place.
template <typename T>
absl::Status AccumulateInto(T* dst, const T* src, int64_t n, cudaStream_t stream);

}  // namespace gradsync::kernels::cuda

// The two conversions between the fp32 master buffers and the bf16 working copies of the mixed
// precision model (cuda_model.h, Precision::kBf16), elementwise over n values:
//
//   CastToBf16:        out[i]  = bf16(in[i])                     (round to nearest even)
//   FlushBf16Grads:    dst[i] += float(src[i]);  src[i] = 0      (fp32 add; exact conversion)
//
// FlushBf16Grads moves a layer's freshly computed bf16 gradients into the fp32 gradient buffer
// and leaves the bf16 scratch zeroed for the next pass, so that every backward kernel can keep
// accumulating (+=) into the scratch as it does into fp32. Grid-stride loops with one value per
// thread step; no reduction, deterministic.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace gradsync::nn::cuda {

// INVALID_ARGUMENT for n < 0 or a null buffer (with n > 0); INTERNAL on a launch error.
absl::Status CastToBf16(__nv_bfloat16* out, const float* in, int64_t n, cudaStream_t stream);

absl::Status FlushBf16Grads(float* dst, __nv_bfloat16* src, int64_t n, cudaStream_t stream);

}  // namespace gradsync::nn::cuda

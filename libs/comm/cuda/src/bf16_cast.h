// fp32 <-> bf16 casts on the device, for gradients sent as bf16 (ddp.gradCompression: bf16):
// round to nearest even on the way out; the way back is exact.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace gradsync::comm {

cudaError_t CastToBf16(const float* in, __nv_bfloat16* out, int64_t n, cudaStream_t stream);
// out[i] = float(in[i]) * scale (scale 1/n averages a sum).
cudaError_t CastFromBf16(const __nv_bfloat16* in, float* out, int64_t n, float scale, cudaStream_t stream);

}  // namespace gradsync::comm

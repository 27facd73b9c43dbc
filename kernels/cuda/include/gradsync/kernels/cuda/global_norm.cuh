// Global gradient norm and clipping by it, as libs/nn's GlobalNorm / ClipGlobalNorm:
//
//   norm_sq  = sum_i g_i^2                     (over one or several flat ranges)
//   scale    = max_norm / norm   if max_norm > 0 and norm > max_norm, else 1
//   g_i     *= scale
//
// GlobalNormSquared is a two-pass reduction with no atomics: pass 1 has a fixed number of blocks
// (a function of n alone, at most kGlobalNormPartials), each summing a grid-strided slice of
// squares into one partial; pass 2 is a single block adding the partials in index order and,
// when accumulating, the previous value. The order of every addition depends only on n, so the
// result is bitwise reproducible (and the same on any GPU model). fp32 sums of fp32 squares.
// ClipScale turns norm_sq into the scale on the device, so clipping and the AdamW update that
// reads the scale (adamw.cuh) need no host synchronisation.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace gradsync::kernels::cuda {

// Partials of pass 1: the scratch GlobalNormSquared needs, in floats.
inline constexpr int64_t kGlobalNormPartials = 1024;

// norm_sq[0] = sum of grads[i]^2 (or norm_sq[0] += it when accumulate, to cover several ranges in
// a fixed order). scratch holds kGlobalNormPartials floats. T is float or __nv_bfloat16.
// INVALID_ARGUMENT for n < 0 or a null buffer.
template <typename T>
absl::Status GlobalNormSquared(float* norm_sq, const T* grads, int64_t n, bool accumulate, float* scratch,
                               cudaStream_t stream);

// scale[0] = the clip factor above from norm_sq[0] (computed in double), and norm[0] = sqrt(norm_sq)
// when norm is not null. max_norm <= 0 disables clipping (scale 1). INVALID_ARGUMENT for a null
// norm_sq or scale.
absl::Status ClipScale(float* scale, float* norm, const float* norm_sq, double max_norm, cudaStream_t stream);

// grads[i] *= scale[0] (a device pointer). INVALID_ARGUMENT for n < 0 or a null buffer.
template <typename T>
absl::Status ScaleGradients(T* grads, int64_t n, const float* scale, cudaStream_t stream);

}  // namespace gradsync::kernels::cuda

// Token embedding plus optional learned positions over [B, T] tokens, as kernels/cpu/encoder.h:
//
//   forward:  out[b, t, :]   = wte[tokens[b, t], :] + wpe[t, :]      (wpe term only if wpe != null)
//   backward: dwte[tok, :]  += dout[b, t, :]   for every (b, t) with tokens[b, t] = tok
//             dwpe[t, :]    += sum_b dout[b, t, :]
//
// wte is [V, C], wpe [T_max, C] (T <= T_max), out [B, T, C].
//
// The backward into dwte is deterministic without float atomics: the (b, t) rows are sorted by
// token with a stable radix sort (integer keys, so the sort itself is exact and reproducible),
// and the first row of every run of equal tokens owns that token's dwte row: it adds the run's
// dout rows in (b, t) order, the CPU reference's order, accumulating in fp32 from dwte's old
// value and rounding once. dwpe has a thread per (t, c) adding over b in order. Both bitwise
// reproducible.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync::kernels::cuda {

// Overwrites out. wpe may be null (llama flavour). A token outside [0, vocab) yields a NaN row
// (callers validate tokens once per batch; this only makes a slip visible). T is float or
// __nv_bfloat16. INVALID_ARGUMENT for negative sizes, vocab < 1 or a null buffer.
template <typename T>
absl::Status EncoderForward(T* out, const int32_t* tokens, const T* wte, const T* wpe, int64_t batch, int64_t seq_len,
                            int64_t channels, int64_t vocab, cudaStream_t stream);

// Bytes of scratch EncoderBackward needs for batch * seq_len rows and this vocabulary.
// INVALID_ARGUMENT for negative sizes, vocab < 1 or more than 2^31 - 1 rows.
absl::StatusOr<size_t> EncoderBackwardScratchBytes(int64_t rows, int64_t vocab);

// Accumulates into dwte and, when not null, dwpe. Tokens outside [0, vocab) are skipped.
// `scratch` holds at least EncoderBackwardScratchBytes(batch * seq_len, vocab) bytes (256-byte
// aligned, as cudaMalloc returns). INVALID_ARGUMENT as above, or for too little scratch.
template <typename T>
absl::Status EncoderBackward(T* dwte, T* dwpe, const T* dout, const int32_t* tokens, int64_t batch, int64_t seq_len,
                             int64_t channels, int64_t vocab, void* scratch, size_t scratch_bytes, cudaStream_t stream);

}  // namespace gradsync::kernels::cuda

// The batch rules of the transformer (src/transformer.h), checked on the host before any upload:
// size x T tokens with 1 <= T <= seqLen, tokens in [0, V), targets in [0, V) or -1. The GPU
// kernels trust their inputs (an out-of-range token would only yield NaNs), so every batch
// passes here first, with the CPU model's messages.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "gradsync/nn/model.h"

namespace gradsync::nn::cuda {

// Returns T, the batch's sequence length (0 for an empty batch), or INVALID_ARGUMENT naming the
// first offending value.
absl::StatusOr<int64_t> CheckTokenBatch(const Batch& batch, bool need_targets,
                                        int64_t max_seq_len, int64_t vocab);

}  // namespace gradsync::nn::cuda

// The batch rules of the transformers, CPU and GPU alike: size x T tokens with 1 <= T <= seqLen,
// tokens in [0, V), targets in [0, V) or -1 (ignored). Checked on the host before any compute; the
// GPU kernels trust their inputs (an out-of-range token would only yield NaNs).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "gradsync/nn/model.h"

namespace gradsync::nn {

// Returns T, the batch's sequence length (0 for an empty batch), or INVALID_ARGUMENT naming the
// first offending value.
absl::StatusOr<int64_t> CheckTokenBatch(const Batch& batch, bool need_targets, int64_t max_seq_len, int64_t vocab);

}  // namespace gradsync::nn

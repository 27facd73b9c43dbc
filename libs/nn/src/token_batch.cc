#include "gradsync/nn/token_batch.h"

#include "absl/strings/str_cat.h"
#include "gradsync/kernels/cpu/softmax_xent.h"

namespace gradsync::nn {

absl::StatusOr<int64_t> CheckTokenBatch(const Batch& batch, bool need_targets, int64_t max_seq_len, int64_t vocab) {
  if (batch.size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("batch size is negative: ", batch.size));
  }
  const int64_t n = static_cast<int64_t>(batch.tokens.size());
  if (batch.size == 0) {
    if (n != 0 || !batch.targets.empty()) {
      return absl::InvalidArgumentError("an empty batch holds tokens or targets");
    }
    return 0;
  }
  const int64_t t = n / batch.size;
  if (n % batch.size != 0 || t < 1 || t > max_seq_len) {
    return absl::InvalidArgumentError(absl::StrCat("batch holds ", n, " tokens for ", batch.size,
                                                   " sequences; expected size x T with 1 <= T <= seqLen (", max_seq_len,
                                                   ")"));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (batch.tokens[i] < 0 || batch.tokens[i] >= vocab) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch token ", i, " is ", batch.tokens[i], ", outside [0, ", vocab, ")"));
    }
  }
  if (!need_targets) return t;
  if (static_cast<int64_t>(batch.targets.size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat("batch holds ", batch.targets.size(), " targets, expected ", n));
  }
  for (int64_t i = 0; i < n; ++i) {
    const int32_t target = batch.targets[i];
    if (target != kernels::cpu::kIgnoreIndex && (target < 0 || target >= vocab)) {
      return absl::InvalidArgumentError(absl::StrCat("batch target ", i, " is ", target, ", outside [0, ", vocab, ")"));
    }
  }
  return t;
}

}  // namespace gradsync::nn

// A job's held-out tokens as fixed windows for an exact mean loss: every token of every file but
// its first is the target of exactly one window position, and no position is counted twice.
//
// File f holds tokens t_0 .. t_{n-1}. Its window w has the inputs t_{w*T} .. t_{w*T+T-1} and the
// targets t_{w*T+1} .. t_{w*T+T} (T = seqLen), the stride of llm.c's validation loader, so the
// target positions 1 .. n-1 are covered once each. Unlike llm.c, which drops the tail, the last
// window of a file is kept when it is short: the inputs past the file are token 0 and their
// targets the ignore index, which the causal model never lets reach an earlier position. Windows
// are numbered file by file, in the order the paths expand. A shard with a loss mask beside it
// (loss_mask.h) counts only the targets its mask keeps: the mean is over those.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/data/data_plan.h"
#include "gradsync/data/loss_mask.h"
#include "gradsync/data/shard_reader.h"
#include "gradsync/nn/model.h"

namespace gradsync::data {

class ValidationSet {
 public:
  // Opens every shard (llm.c .bin files or globs, expanded in order); windows are read from disk
  // when asked for (ShardReader), so the set costs no memory per token. INVALID_ARGUMENT naming
  // the file for ShardReader::Open's refusals and for a file of a single token (nothing to
  // predict).
  static absl::StatusOr<std::unique_ptr<ValidationSet>> Load(const std::vector<std::string>& paths, int seq_len,
                                                             int vocab_size);

  int64_t windows() const { return windows_end_.empty() ? 0 : windows_end_.back(); }
  // The target positions over every window: the tokens of every file less one per file (before
  // any loss mask leaves some out).
  int64_t targets() const { return targets_; }
  int seq_len() const { return seq_len_; }
  // Fills `out` with windows [first, first + count), which must lie within windows(); replaces
  // its contents. Safe to call from several threads. ShardReader::Read's errors (a token outside
  // the vocabulary, a file cut while training), naming the file.
  absl::Status Fill(int64_t first, int64_t count, nn::Batch* out) const;

 private:
  int seq_len_ = 0;
  int64_t targets_ = 0;
  std::vector<ShardReader> files_;
  std::vector<std::optional<MaskReader>> masks_;  // per file: its loss mask, if it has one
  // windows_end_[f]: the windows of files 0..f together.
  std::vector<int64_t> windows_end_;
};

// The validation set of a plan: nullptr when it has none (the coordinator has already added the
// shards found by default, and data.validation.disabled leaves none). Load's errors, prefixed
// "data.validation: ".
absl::StatusOr<std::unique_ptr<ValidationSet>> CreateValidationSet(const DataPlan& plan);

}  // namespace gradsync::data

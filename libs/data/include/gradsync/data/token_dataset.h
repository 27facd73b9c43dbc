// Language-model samples from token files: sample i is a window of seq_len + 1 tokens, the first
// seq_len the inputs and the last seq_len the targets (each token's successor). Windows do not
// overlap and never cross from one file to the next.
//
// A shard with a loss mask beside it (loss_mask.h: what `gradsync data prepare --chat` writes) has
// the targets its mask leaves out set to the ignore index, so they add no loss and no gradient.
//
// Shards are streamed (ShardReader): their headers are checked at Load and each window is read
// from disk when a batch asks for it, so a rank holds its batches, not the dataset, and there is
// no bound on the number or size of shards beyond the format's own; counts and sample indices are
// 64-bit. Text files (tokenised bytewise) are read whole, each at most kMaxDataFileBytes, and at
// most kMaxTextDatasetTokens in all.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/data/dataset.h"
#include "gradsync/data/loss_mask.h"
#include "gradsync/data/shard_reader.h"
#include "gradsync/data/token_stream.h"

namespace gradsync::data {

// The most tokens of text one TokenDataset holds in memory from all its files together: 2^31
// (4 GiB as uint16). With the cap on each file (token_shard.h), what Load reads of text is bounded
// whatever the paths match; `gradsync data prepare` turns larger corpora into shards.
inline constexpr int64_t kMaxTextDatasetTokens = int64_t{1} << 31;

class TokenDataset : public Dataset {
 public:
  // Opens every file at start (reads every text file), so bad data fails the job before
  // training, naming the file. `shards`: llm.c .bin files; otherwise UTF-8 text, tokenised
  // bytewise (vocab_size must be 256). INVALID_ARGUMENT when a file cannot hold a single window of
  // seq_len + 1 tokens, when text files together hold more than kMaxTextDatasetTokens, and for
  // ShardReader::Open's and ReadTextTokens' refusals (not a regular file, a bad shard, text too
  // large). A shard's tokens are checked against the vocabulary as they are read (Fill).
  static absl::StatusOr<std::unique_ptr<TokenDataset>> Load(const std::vector<std::string>& paths, bool shards,
                                                            int seq_len, int vocab_size);

  int64_t size() const override { return windows_end_.empty() ? 0 : windows_end_.back(); }
  // A target whose token a shard's loss mask leaves out is the ignore index (no loss, no gradient).
  absl::Status Fill(std::span<const int64_t> indices, nn::Batch* out) const override;
  bool masked() const override { return masked_; }
  int seq_len() const { return seq_len_; }
  int64_t total_tokens() const;

 private:
  // Tokens [first, first + count) of file `file` into `out`.
  absl::Status ReadTokens(size_t file, int64_t first, int64_t count, int32_t* out) const;

  int seq_len_ = 0;
  std::vector<ShardReader> shards_;  // the shards, streamed; or
  std::vector<TokenStream> texts_;   // the text files, in memory
  // Per shard: its loss mask (train_000000.mask beside train_000000.bin), if it has one.
  std::vector<std::optional<MaskReader>> masks_;
  bool masked_ = false;
  // windows_end_[f]: the windows of files 0..f together (file f's are the indices from
  // windows_end_[f - 1]); one number per file, not one entry per window.
  std::vector<int64_t> windows_end_;
};

}  // namespace gradsync::data

// Language-model samples from token streams: sample i is a window of seq_len + 1 tokens, the
// first seq_len the inputs and the last seq_len the targets (each token's successor). Windows do
// not overlap and never cross from one file to the next.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/data/dataset.h"
#include "gradsync/data/token_stream.h"

namespace gradsync::data {

// The most tokens one TokenDataset loads from all its files together: 2^31 (4 GiB in memory as
// uint16, 8 GiB as uint32).
// With the cap on each file (token_shard.h), what Load reads is bounded whatever the paths match.
inline constexpr int64_t kMaxDatasetTokens = int64_t{1} << 31;

class TokenDataset : public Dataset {
 public:
  // Loads every file at start, so bad data fails the job before training, naming the file.
  // `shards`: llm.c .bin files; otherwise UTF-8 text, tokenised bytewise (vocab_size must be 256).
  // INVALID_ARGUMENT when a file cannot hold a single window of seq_len + 1 tokens, when the files
  // together hold more than kMaxDatasetTokens, and for ReadShard's and ReadTextTokens' refusals
  // (not a regular file, too large, a bad shard).
  static absl::StatusOr<std::unique_ptr<TokenDataset>> Load(const std::vector<std::string>& paths, bool shards,
                                                            int seq_len, int vocab_size);

  int64_t size() const override { return windows_end_.empty() ? 0 : windows_end_.back(); }
  void Fill(std::span<const int64_t> indices, nn::Batch* out) const override;
  int seq_len() const { return seq_len_; }
  int64_t total_tokens() const;

 private:
  int seq_len_ = 0;
  std::vector<TokenStream> files_;
  // windows_end_[f]: the windows of files 0..f together (file f's are the indices from
  // windows_end_[f - 1]); one number per file, not one entry per window.
  std::vector<int64_t> windows_end_;
};

}  // namespace gradsync::data

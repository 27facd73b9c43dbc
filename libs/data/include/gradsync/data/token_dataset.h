// Language-model samples from token streams: sample i is a window of seq_len + 1 tokens, the
// first seq_len the inputs and the last seq_len the targets (each token's successor). Windows do
// not overlap and never cross from one file to the next.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/data/dataset.h"

namespace gradsync::data {

class TokenDataset : public Dataset {
 public:
  // Loads every file at start, so bad data fails the job before training, naming the file.
  // `shards`: llm.c .bin files; otherwise UTF-8 text, tokenised bytewise (vocab_size must be 256).
  // INVALID_ARGUMENT when a file cannot hold a single window of seq_len + 1 tokens.
  static absl::StatusOr<std::unique_ptr<TokenDataset>> Load(const std::vector<std::string>& paths, bool shards,
                                                            int seq_len, int vocab_size);

  int64_t size() const override { return static_cast<int64_t>(windows_.size()); }
  void Fill(std::span<const int64_t> indices, nn::Batch* out) const override;
  int seq_len() const { return seq_len_; }
  int64_t total_tokens() const;

 private:
  struct Window {
    int file;
    int64_t start;
  };
  int seq_len_ = 0;
  std::vector<std::vector<uint16_t>> files_;
  std::vector<Window> windows_;
};

}  // namespace gradsync::data

#include "gradsync/data/token_dataset.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gradsync/data/shards_info.h"
#include "gradsync/data/token_shard.h"
#include "gradsync/kernels/cpu/softmax_xent.h"

namespace gradsync::data {

absl::StatusOr<std::unique_ptr<TokenDataset>> TokenDataset::Load(const std::vector<std::string>& patterns, bool shards,
                                                                 int seq_len, int vocab_size) {
  if (seq_len <= 0) return absl::InvalidArgumentError(absl::StrCat("sequence length must be positive, got ", seq_len));
  if (!shards && vocab_size != kByteVocab) {
    return absl::InvalidArgumentError(absl::StrCat("data.text: text is tokenised bytewise (vocabulary 256); ",
                                                   "the model's vocabulary is ", vocab_size));
  }
  auto paths = ExpandPaths(patterns);
  if (!paths.ok()) return paths.status();
  auto ds = std::unique_ptr<TokenDataset>(new TokenDataset());
  ds->seq_len_ = seq_len;
  int64_t total = 0;
  for (const std::string& path : *paths) {
    if (shards) {
      if (absl::Status s = CheckShardsVocab(path, vocab_size); !s.ok()) return s;
    }
    auto tokens = shards ? ReadShard(path, vocab_size) : ReadTextTokens(path);
    if (!tokens.ok()) return tokens.status();
    total += tokens->size();
    if (total > kMaxDatasetTokens) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": the files up to this one hold more than the ",
                                                     kMaxDatasetTokens, " tokens a dataset may hold"));
    }
    const int64_t windows = (tokens->size() - 1) / seq_len;
    if (windows <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": too short to fill one sample of ", seq_len + 1, " tokens"));
    }
    ds->windows_end_.push_back(ds->size() + windows);
    ds->files_.push_back(*std::move(tokens));
  }
  return ds;
}

int64_t TokenDataset::total_tokens() const {
  int64_t n = 0;
  for (const TokenStream& f : files_) n += f.size();
  return n;
}

void TokenDataset::Fill(std::span<const int64_t> indices, nn::Batch* out) const {
  out->size = static_cast<int64_t>(indices.size());
  out->feature_dim = 0;
  out->features.clear();
  out->tokens.resize(indices.size() * seq_len_);
  out->targets.resize(indices.size() * seq_len_);
  for (size_t b = 0; b < indices.size(); ++b) {
    if (indices[b] == kPadIndex) {
      std::fill_n(out->tokens.begin() + static_cast<std::ptrdiff_t>(b * seq_len_), seq_len_, 0);
      std::fill_n(out->targets.begin() + static_cast<std::ptrdiff_t>(b * seq_len_), seq_len_,
                  kernels::cpu::kIgnoreIndex);
      continue;
    }
    const auto file = std::upper_bound(windows_end_.begin(), windows_end_.end(), indices[b]) - windows_end_.begin();
    const int64_t window = indices[b] - (file == 0 ? 0 : windows_end_[file - 1]);
    files_[file].CopyTo(window * seq_len_, seq_len_, out->tokens.data() + b * seq_len_);
    files_[file].CopyTo(window * seq_len_ + 1, seq_len_, out->targets.data() + b * seq_len_);
  }
}

}  // namespace gradsync::data

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
  int64_t text_tokens = 0;
  for (const std::string& path : *paths) {
    int64_t tokens = 0;
    if (shards) {
      if (absl::Status s = CheckShardsFor(path, vocab_size, seq_len); !s.ok()) return s;
      absl::StatusOr<ShardReader> shard = ShardReader::Open(path, vocab_size);
      if (!shard.ok()) return shard.status();
      tokens = shard->size();
      absl::StatusOr<std::optional<MaskReader>> mask = OpenMaskOf(path, tokens);
      if (!mask.ok()) return mask.status();
      ds->masked_ = ds->masked_ || mask->has_value();
      ds->masks_.push_back(*std::move(mask));
      ds->shards_.push_back(*std::move(shard));
    } else {
      absl::StatusOr<TokenStream> text = ReadTextTokens(path);
      if (!text.ok()) return text.status();
      tokens = text->size();
      text_tokens += tokens;
      if (text_tokens > kMaxTextDatasetTokens) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": the text files up to this one hold more than the ",
                                                       kMaxTextDatasetTokens, " tokens a dataset of text may hold (",
                                                       "`gradsync data prepare` makes shards of larger corpora)"));
      }
      ds->texts_.push_back(*std::move(text));
    }
    const int64_t windows = (tokens - 1) / seq_len;
    if (windows <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": too short to fill one sample of ", seq_len + 1, " tokens"));
    }
    ds->windows_end_.push_back(ds->size() + windows);
  }
  return ds;
}

int64_t TokenDataset::total_tokens() const {
  int64_t n = 0;
  for (const ShardReader& f : shards_) n += f.size();
  for (const TokenStream& f : texts_) n += f.size();
  return n;
}

absl::Status TokenDataset::ReadTokens(size_t file, int64_t first, int64_t count, int32_t* out) const {
  if (!shards_.empty()) return shards_[file].Read(first, count, out);
  texts_[file].CopyTo(first, count, out);
  return absl::OkStatus();
}

absl::Status TokenDataset::Fill(std::span<const int64_t> indices, nn::Batch* out) const {
  out->size = static_cast<int64_t>(indices.size());
  out->feature_dim = 0;
  out->features.clear();
  out->tokens.resize(indices.size() * seq_len_);
  out->targets.resize(indices.size() * seq_len_);
  std::vector<int32_t> window(static_cast<size_t>(seq_len_) + 1);
  for (size_t b = 0; b < indices.size(); ++b) {
    int32_t* tokens = out->tokens.data() + b * seq_len_;
    int32_t* targets = out->targets.data() + b * seq_len_;
    if (indices[b] == kPadIndex) {
      std::fill_n(tokens, seq_len_, 0);
      std::fill_n(targets, seq_len_, kernels::cpu::kIgnoreIndex);
      continue;
    }
    const auto file = std::upper_bound(windows_end_.begin(), windows_end_.end(), indices[b]) - windows_end_.begin();
    const int64_t first = (indices[b] - (file == 0 ? 0 : windows_end_[file - 1])) * seq_len_;
    // One read of seq_len + 1 tokens: the inputs, and the targets one token on.
    if (absl::Status s = ReadTokens(static_cast<size_t>(file), first, seq_len_ + 1, window.data()); !s.ok()) return s;
    std::copy_n(window.begin(), seq_len_, tokens);
    std::copy_n(window.begin() + 1, seq_len_, targets);
    if (!masks_.empty() && masks_[static_cast<size_t>(file)].has_value()) {
      if (absl::Status s = masks_[static_cast<size_t>(file)]->MaskTargets(first + 1, seq_len_, targets); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace gradsync::data

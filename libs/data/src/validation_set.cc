#include "gradsync/data/validation_set.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gradsync/data/shards_info.h"
#include "gradsync/data/token_shard.h"
#include "gradsync/kernels/cpu/softmax_xent.h"

namespace gradsync::data {

absl::StatusOr<std::unique_ptr<ValidationSet>> ValidationSet::Load(const std::vector<std::string>& patterns,
                                                                   int seq_len, int vocab_size) {
  if (seq_len <= 0) return absl::InvalidArgumentError(absl::StrCat("sequence length must be positive, got ", seq_len));
  auto paths = ExpandPaths(patterns);
  if (!paths.ok()) return paths.status();
  auto set = std::unique_ptr<ValidationSet>(new ValidationSet());
  set->seq_len_ = seq_len;
  for (const std::string& path : *paths) {
    if (absl::Status s = CheckShardsFor(path, vocab_size, seq_len); !s.ok()) return s;
    auto tokens = ShardReader::Open(path, vocab_size);
    if (!tokens.ok()) return tokens.status();
    const int64_t n = tokens->size();
    if (n < 2) return absl::InvalidArgumentError(absl::StrCat(path, ": holds no token to predict (one token)"));
    set->targets_ += n - 1;
    set->windows_end_.push_back(set->windows() + (n - 1 + seq_len - 1) / seq_len);
    absl::StatusOr<std::optional<MaskReader>> mask = OpenMaskOf(path, n);
    if (!mask.ok()) return mask.status();
    set->masks_.push_back(*std::move(mask));
    set->files_.push_back(*std::move(tokens));
  }
  return set;
}

absl::Status ValidationSet::Fill(int64_t first, int64_t count, nn::Batch* out) const {
  const int64_t T = seq_len_;
  out->size = count;
  out->feature_dim = 0;
  out->features.clear();
  out->tokens.assign(count * T, 0);
  out->targets.assign(count * T, kernels::cpu::kIgnoreIndex);
  std::vector<int32_t> window;
  for (int64_t b = 0; b < count; ++b) {
    const int64_t index = first + b;
    const auto file = std::upper_bound(windows_end_.begin(), windows_end_.end(), index) - windows_end_.begin();
    const ShardReader& tokens = files_[file];
    const int64_t start = (index - (file == 0 ? 0 : windows_end_[file - 1])) * T;
    // Positions whose target lies in the file; the rest keep token 0 and the ignore index.
    const int64_t valid = std::min<int64_t>(T, tokens.size() - 1 - start);
    window.resize(static_cast<size_t>(valid) + 1);
    if (absl::Status s = tokens.Read(start, valid + 1, window.data()); !s.ok()) return s;
    std::copy_n(window.begin(), valid, out->tokens.data() + b * T);
    std::copy_n(window.begin() + 1, valid, out->targets.data() + b * T);
    if (const std::optional<MaskReader>& mask = masks_[static_cast<size_t>(file)]; mask.has_value()) {
      if (absl::Status s = mask->MaskTargets(start + 1, valid, out->targets.data() + b * T); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ValidationSet>> CreateValidationSet(const DataPlan& plan) {
  if (!plan.validation.has_value()) return std::unique_ptr<ValidationSet>();
  const ValidationPlan& v = *plan.validation;
  absl::StatusOr<std::unique_ptr<ValidationSet>> set =
      ValidationSet::Load(v.paths, static_cast<int>(v.seq_len), static_cast<int>(v.vocab));
  if (!set.ok()) return absl::Status(set.status().code(), absl::StrCat("data.validation: ", set.status().message()));
  return set;
}

}  // namespace gradsync::data

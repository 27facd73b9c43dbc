#include "bpe_model.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "byte_level.h"

namespace gradsync::tokenizer {

absl::StatusOr<std::unique_ptr<BpeModel>> BpeModel::Create(
    const std::vector<std::pair<std::string, int32_t>>& vocab,
    const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges, const Origin& origin) {
  auto model = std::unique_ptr<BpeModel>(new BpeModel());
  model->ignore_merges_ = ignore_merges;
  absl::flat_hash_map<std::string_view, int32_t> ids;
  ids.reserve(vocab.size());
  for (const auto& [token, id] : vocab) ids.emplace(token, id);
  for (int b = 0; b < 256; ++b) {
    const auto it = ids.find(ToByteLevel(std::string(1, static_cast<char>(b))));
    if (it == ids.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: has no token for byte 0x%02X (a byte-level vocabulary holds all 256)", origin.vocab, b));
    }
    model->byte_ids_[b] = it->second;
  }
  model->merges_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [a, b] = merges[i];
    const auto left = ids.find(a), right = ids.find(b), made = ids.find(a + b);
    if (left == ids.end() || right == ids.end() || made == ids.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin.merges, "[", i, "]: merges tokens, or makes one, that ", origin.vocab, " lacks"));
    }
    // A pair listed twice keeps its last rank, as GPT-2's dict(zip(merges, ranks)) and Hugging
    // Face's map of merges do.
    model->merges_.insert_or_assign(PairKey(left->second, right->second), Merge{static_cast<int32_t>(i), made->second});
  }
  if (ignore_merges) {
    for (const auto& [token, id] : vocab) {
      if (std::optional<std::string> bytes = FromByteLevel(token)) model->whole_.emplace(*std::move(bytes), id);
    }
  }
  return model;
}

std::vector<int32_t> BpeModel::Merged(std::string_view piece) const {
  std::vector<int32_t> symbols;
  symbols.reserve(piece.size());
  for (char c : piece) symbols.push_back(byte_ids_[static_cast<uint8_t>(c)]);
  std::vector<int32_t> next;
  while (symbols.size() > 1) {
    const Merge* best = nullptr;
    uint64_t best_pair = 0;
    for (size_t k = 0; k + 1 < symbols.size(); ++k) {
      const auto it = merges_.find(PairKey(symbols[k], symbols[k + 1]));
      if (it != merges_.end() && (best == nullptr || it->second.rank < best->rank)) {
        best = &it->second;
        best_pair = it->first;
      }
    }
    if (best == nullptr) break;
    next.clear();
    for (size_t k = 0; k < symbols.size(); ++k) {
      if (k + 1 < symbols.size() && PairKey(symbols[k], symbols[k + 1]) == best_pair) {
        next.push_back(best->id);
        ++k;
      } else {
        next.push_back(symbols[k]);
      }
    }
    symbols.swap(next);
  }
  return symbols;
}

void BpeModel::EncodePiece(std::string_view piece, std::vector<int32_t>* ids) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    if (const auto it = whole_.find(absl::string_view(piece.data(), piece.size())); it != whole_.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  const bool cacheable = piece.size() <= kMaxCachedBytes;
  if (cacheable) {
    absl::MutexLock lock(&mu_);
    if (const auto it = cache_.find(absl::string_view(piece.data(), piece.size())); it != cache_.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> merged = Merged(piece);
  ids->insert(ids->end(), merged.begin(), merged.end());
  if (cacheable) {
    absl::MutexLock lock(&mu_);
    if (cache_.size() >= kMaxCached) cache_.clear();
    cache_.emplace(std::string(piece), std::move(merged));
  }
}

}  // namespace gradsync::tokenizer

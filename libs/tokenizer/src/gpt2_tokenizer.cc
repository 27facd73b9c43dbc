// GPT-2's own files, encoded as its encoder.py does: GPT-2's split pattern over the text, then
// byte-level BPE per piece. "<|endoftext|>" in the text is text, as there.
#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "bpe_model.h"
#include "decode_table.h"
#include "gradsync/core/utf8.h"
#include "loaders.h"
#include "pre_tokenizer.h"
#include "tokenizer_file.h"
#include "unicode.h"

namespace gradsync::tokenizer {
namespace {

class Gpt2Tokenizer final : public Tokenizer {
 public:
  Gpt2Tokenizer(std::unique_ptr<BpeModel> bpe, DecodeTable table, absl::flat_hash_map<std::string, int32_t> special)
      : bpe_(std::move(bpe)), table_(std::move(table)), special_(std::move(special)) {}

  TokenizerKind kind() const override { return TokenizerKind::kGpt2Bpe; }
  int vocab_size() const override { return table_.size(); }

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text) const override {
    const std::string valid = utf8::ToValid(text);
    std::vector<int32_t> ids;
    for (std::string_view piece : SplitText(valid, SplitPattern::kGpt2)) bpe_->EncodePiece(piece, &ids);
    return ids;
  }

  absl::StatusOr<std::string> Decode(std::span<const int32_t> ids) const override { return table_.Decode(ids); }

  std::optional<int32_t> SpecialTokenId(std::string_view token) const override {
    auto it = special_.find(std::string(token));
    return it == special_.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }

 private:
  std::unique_ptr<BpeModel> bpe_;
  DecodeTable table_;
  absl::flat_hash_map<std::string, int32_t> special_;  // encoder.json's "<|...|>" entries
};

absl::StatusOr<std::vector<std::pair<std::string, int32_t>>> ReadEncoder(const std::string& path) {
  absl::StatusOr<google::protobuf::Value> json = ReadJsonFile(path);
  if (!json.ok()) return json.status();
  if (!json->has_struct_value()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is not a JSON object of token ids"));
  }
  std::vector<std::pair<std::string, int32_t>> vocab;
  vocab.reserve(json->struct_value().fields().size());
  for (const auto& [token, value] : json->struct_value().fields()) {
    const double id = value.number_value();
    if (!value.has_number_value() || id < 0 || id >= (1 << 30) || id != static_cast<int32_t>(id)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": every token's value must be an id, an integer from 0"));
    }
    vocab.emplace_back(token, static_cast<int32_t>(id));
  }
  return vocab;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ReadMerges(const std::string& path) {
  absl::StatusOr<std::string> text = ReadTokenizerFile(path);
  if (!text.ok()) return text.status();
  std::vector<std::pair<std::string, std::string>> merges;
  const std::string_view all(*text);
  int line_number = 0;
  for (size_t start = 0; start < all.size();) {
    const size_t newline = std::min(all.find('\n', start), all.size());
    std::string_view line = all.substr(start, newline - start);
    start = newline + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_number == 1 && line.starts_with("#version"))) continue;
    const size_t space = line.find(' ');
    if (space == 0 || space == std::string_view::npos || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": line ", line_number, ": a merge is two tokens separated by one space"));
    }
    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return merges;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadGpt2Tokenizer(const std::string& encoder_json,
                                                             const std::string& vocab_bpe) {
  absl::StatusOr<std::vector<std::pair<std::string, int32_t>>> vocab = ReadEncoder(encoder_json);
  if (!vocab.ok()) return vocab.status();
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> merges = ReadMerges(vocab_bpe);
  if (!merges.ok()) return merges.status();
  absl::StatusOr<std::unique_ptr<BpeModel>> bpe =
      BpeModel::Create(*vocab, *merges, /*ignore_merges=*/false, {encoder_json, vocab_bpe + " merges"});
  if (!bpe.ok()) return bpe.status();
  DecodeTable table;
  absl::flat_hash_map<std::string, int32_t> special;
  for (const auto& [token, id] : *vocab) {
    table.Set(id, token);
    if (token.size() > 4 && token.starts_with("<|") && token.ends_with("|>")) special.emplace(token, id);
  }
  return std::make_unique<Gpt2Tokenizer>(*std::move(bpe), std::move(table), std::move(special));
}

}  // namespace gradsync::tokenizer

// A Hugging Face tokenizer.json (hf_config.h says which forms), encoded as the tokenizers
// library does: added tokens first, then per remaining segment ByteLevel's prefix space, the
// split pattern and byte-level BPE per piece.
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "bpe_model.h"
#include "decode_table.h"
#include "gradsync/core/utf8.h"
#include "hf_config.h"
#include "loaders.h"
#include "tokenizer_file.h"
#include "unicode.h"

namespace gradsync::tokenizer {
namespace {

class HuggingFaceTokenizer final : public Tokenizer {
 public:
  HuggingFaceTokenizer(const HfConfig& config, std::unique_ptr<BpeModel> bpe, DecodeTable table)
      : add_prefix_space_(config.add_prefix_space),
        split_(config.split),
        added_(config.added_tokens),
        bpe_(std::move(bpe)),
        table_(std::move(table)) {
    for (const AddedToken& t : config.added_tokens) special_.emplace(t.content, t.id);
  }

  TokenizerKind kind() const override { return TokenizerKind::kHuggingFace; }
  int vocab_size() const override { return table_.size(); }

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text) const override {
    const std::string valid = utf8::ToValid(text);
    std::vector<int32_t> ids;
    std::string prefixed;
    for (const Segment& segment : added_.Split(valid)) {
      if (segment.id >= 0) {
        ids.push_back(segment.id);
        continue;
      }
      std::string_view rest = segment.text;
      if (add_prefix_space_ && !rest.starts_with(' ')) {
        prefixed = std::string(" ").append(rest);
        rest = prefixed;
      }
      if (!split_) {
        bpe_->EncodePiece(rest, &ids);
        continue;
      }
      for (std::string_view piece : SplitText(rest, *split_)) bpe_->EncodePiece(piece, &ids);
    }
    return ids;
  }

  absl::StatusOr<std::string> Decode(std::span<const int32_t> ids) const override { return table_.Decode(ids); }

  std::optional<int32_t> SpecialTokenId(std::string_view token) const override {
    auto it = special_.find(std::string(token));
    return it == special_.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }

 private:
  absl::flat_hash_map<std::string, int32_t> special_;  // the added tokens
  bool add_prefix_space_;
  std::optional<SplitPattern> split_;
  AddedTokens added_;
  std::unique_ptr<BpeModel> bpe_;
  DecodeTable table_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadHuggingFaceTokenizer(const std::string& path) {
  absl::StatusOr<google::protobuf::Value> json = ReadJsonFile(path);
  if (!json.ok()) return json.status();
  absl::StatusOr<HfConfig> config = ParseHfConfig(*json, path);
  if (!config.ok()) return config.status();
  absl::StatusOr<std::unique_ptr<BpeModel>> bpe = BpeModel::Create(config->vocab, config->merges, config->ignore_merges,
                                                                   {path + ": model.vocab", path + ": model.merges"});
  if (!bpe.ok()) return bpe.status();
  // Added tokens take their ids over from the model's, as in Hugging Face's id_to_token.
  DecodeTable table;
  for (const auto& [token, id] : config->vocab) table.Set(id, token);
  for (const AddedToken& added : config->added_tokens) table.Set(added.id, added.content);
  return std::make_unique<HuggingFaceTokenizer>(*config, *std::move(bpe), std::move(table));
}

}  // namespace gradsync::tokenizer

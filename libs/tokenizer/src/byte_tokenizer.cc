// MakeByteTokenizer: the tokenizer gradsync used before it read tokenizer files, one id per byte.
#include "absl/strings/str_cat.h"
#include "gradsync/tokenizer/tokenizer.h"

namespace gradsync::tokenizer {
namespace {

constexpr int kByteVocab = 256;

class ByteTokenizer final : public Tokenizer {
 public:
  TokenizerKind kind() const override { return TokenizerKind::kBytes; }
  int vocab_size() const override { return kByteVocab; }

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text) const override {
    std::vector<int32_t> ids(text.size());
    for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
    return ids;
  }

  absl::StatusOr<std::string> Decode(std::span<const int32_t> ids) const override {
    std::string out(ids.size(), '\0');
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= kByteVocab) {
        return absl::InvalidArgumentError(
            absl::StrCat("token ", i, " (id ", ids[i], ") is not in the vocabulary of ", kByteVocab, " ids"));
      }
      out[i] = static_cast<char>(ids[i]);
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tokenizer> MakeByteTokenizer() { return std::make_unique<ByteTokenizer>(); }

}  // namespace gradsync::tokenizer

// LoadSentencePieceTokenizer where gradsync was configured without libsentencepiece-dev.
#include "absl/strings/str_cat.h"
#include "loaders.h"

namespace gradsync::tokenizer {

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadSentencePieceTokenizer(const std::string& path) {
  return absl::UnimplementedError(absl::StrCat(
      path, ": SentencePiece models are not supported by this build (configure with libsentencepiece-dev installed)"));
}

}  // namespace gradsync::tokenizer

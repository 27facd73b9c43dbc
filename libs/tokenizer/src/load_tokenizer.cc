// LoadTokenizer: the kind of tokenizer from the path's name (and, for a directory, the files in
// it), then that kind's loader.
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "gradsync/tokenizer/tokenizer.h"
#include "loaders.h"

namespace gradsync::tokenizer {
namespace {

namespace fs = std::filesystem;

constexpr char kHfFile[] = "tokenizer.json";
constexpr char kGpt2Encoder[] = "encoder.json";
constexpr char kGpt2Merges[] = "vocab.bpe";
constexpr char kSentencePieceFile[] = "tokenizer.model";

bool Exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadDirectory(const fs::path& dir) {
  if (Exists(dir / kHfFile)) return LoadHuggingFaceTokenizer(dir / kHfFile);
  if (Exists(dir / kGpt2Encoder) || Exists(dir / kGpt2Merges)) {
    return LoadGpt2Tokenizer(dir / kGpt2Encoder, dir / kGpt2Merges);
  }
  if (Exists(dir / kSentencePieceFile)) return LoadSentencePieceTokenizer(dir / kSentencePieceFile);
  return absl::NotFoundError(absl::StrCat(dir.string(), ": holds no ", kHfFile, ", ", kGpt2Encoder, " + ", kGpt2Merges,
                                          " or ", kSentencePieceFile));
}

}  // namespace

std::string_view KindName(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::kBytes: return "bytes";
    case TokenizerKind::kGpt2Bpe: return "gpt2-bpe";
    case TokenizerKind::kHuggingFace: return "hf-tokenizer-json";
    case TokenizerKind::kSentencePiece: return "sentencepiece";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path) {
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) return LoadDirectory(p);
  const std::string name = p.filename().string();
  if (name == kGpt2Encoder || name == kGpt2Merges) {
    return LoadGpt2Tokenizer(p.parent_path() / kGpt2Encoder, p.parent_path() / kGpt2Merges);
  }
  if (p.extension() == ".json") return LoadHuggingFaceTokenizer(path);
  if (p.extension() == ".model") return LoadSentencePieceTokenizer(path);
  if (!Exists(p)) return absl::NotFoundError(absl::StrCat(path, ": no such file or directory"));
  return absl::InvalidArgumentError(
      absl::StrCat(path,
                   ": cannot tell the tokenizer's kind: name a tokenizer.json (or any *.json), GPT-2's encoder.json or "
                   "vocab.bpe, a SentencePiece *.model, or a directory holding one of them"));
}

}  // namespace gradsync::tokenizer

// Tokenizers: text (bytes) to token ids and back, loaded from the files models ship with.
//
// Three kinds, told apart by the file (LoadTokenizer):
//   - GPT-2's byte-level BPE: `encoder.json` (token -> id) and `vocab.bpe` (merges by rank);
//   - a Hugging Face `tokenizer.json` with a BPE model and a byte-level pre-tokenizer (GPT-2,
//     Llama-3 and MiniMind-style files);
//   - a SentencePiece `.model`, run by Debian's libsentencepiece through a plugin
//     (libgradsync_sentencepiece.so beside the binary; see README.md for why).
//
// Text is bytes. Invalid UTF-8 is read as the WHATWG decoder (and so every JavaScript
// TextDecoder) reads it: each maximal ill-formed subsequence stands for one U+FFFD. Encoding is
// therefore lossless for valid UTF-8 only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync::tokenizer {

enum class TokenizerKind { kBytes, kGpt2Bpe, kHuggingFace, kSentencePiece };

// "bytes", "gpt2-bpe", "hf-tokenizer-json" or "sentencepiece": the names the shards' metadata
// and the CLI print.
std::string_view KindName(TokenizerKind kind);

// A loaded tokenizer. Immutable after loading except for internal caches: every method may be
// called from any number of threads at once.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  virtual TokenizerKind kind() const = 0;

  // The rows an embedding table needs for every id this tokenizer produces or decodes: one more
  // than the largest id, added and special tokens included.
  virtual int vocab_size() const = 0;

  // The ids of `text`, with no BOS/EOS or other template tokens added (as Hugging Face's
  // encode(text, add_special_tokens=False)). A tokenizer.json's added tokens found in the text
  // become their ids, as Hugging Face does; GPT-2's encoder.json treats all text as text.
  // INTERNAL only if the underlying library fails.
  virtual absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text) const = 0;

  // The bytes `ids` stand for, concatenated. Byte-level tokens can split a UTF-8 character, so
  // the result of a part of a sequence need not be valid UTF-8. INVALID_ARGUMENT naming the
  // position of an id outside [0, vocab_size()) or without a token.
  virtual absl::StatusOr<std::string> Decode(std::span<const int32_t> ids) const = 0;

  // The id of a special token given by its text, such as "<|endoftext|>" or "<|im_end|>": one of a
  // tokenizer.json's added tokens, or an entry of GPT-2's encoder.json spelled "<|...|>". None
  // when the tokenizer has no such token (bytes and SentencePiece models name none here).
  virtual std::optional<int32_t> SpecialTokenId(std::string_view token) const { return std::nullopt; }
};

// Loads the tokenizer `path` names, picking the kind from it:
//   - a directory: its `tokenizer.json`, else its `encoder.json` + `vocab.bpe`, else its
//     `tokenizer.model`;
//   - `encoder.json` or `vocab.bpe`: GPT-2's pair, the other file beside it;
//   - any other `*.json`: a Hugging Face tokenizer.json;
//   - `*.model`: a SentencePiece model.
// NOT_FOUND when a file is missing; INVALID_ARGUMENT naming the file and, for a tokenizer.json,
// the JSON field (e.g. `normalizer.type: "NFC" is not supported`) for what cannot be read or is
// not supported; UNIMPLEMENTED for a .model when gradsync was built without libsentencepiece or
// its plugin cannot be loaded. Errors never quote the files' contents.
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path);

// gradsync's default: one token per byte, vocabulary 256; every byte string round-trips.
std::unique_ptr<Tokenizer> MakeByteTokenizer();

}  // namespace gradsync::tokenizer

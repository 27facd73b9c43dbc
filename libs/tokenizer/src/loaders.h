// The loaders LoadTokenizer dispatches to, one per kind; each file's paths are as given.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gradsync/tokenizer/tokenizer.h"

namespace gradsync::tokenizer {

// GPT-2's encoder.json (byte-level token -> id) and vocab.bpe (a "#version" line, then one
// merge "A B" per line in rank order).
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadGpt2Tokenizer(const std::string& encoder_json,
                                                             const std::string& vocab_bpe);

// A Hugging Face tokenizer.json (hf_tokenizer.cc says which forms are read).
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadHuggingFaceTokenizer(const std::string& path);

// A SentencePiece .model; UNIMPLEMENTED when gradsync was built without libsentencepiece.
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadSentencePieceTokenizer(const std::string& path);

}  // namespace gradsync::tokenizer

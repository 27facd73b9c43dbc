// Pre-tokenization: text cut into the pieces BPE encodes one by one, by the regular expressions
// byte-level tokenizers use, matched by hand over UTF-8 (leftmost alternative first, greedy, as a
// backtracking engine matches them). The patterns cover every character, so the pieces
// concatenate back to the text.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace gradsync::tokenizer {

enum class SplitPattern {
  // GPT-2 (and Hugging Face's ByteLevel pre-tokenizer with use_regex):
  //   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kGpt2,
  // Llama-3 (also in DeepSeek-style files):
  //   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*
  //   |\s*[\r\n]+|\s+(?!\S)|\s+
  kLlama3,
  // Qwen2: as kLlama3 with \p{N} (one digit per piece) for \p{N}{1,3}.
  kQwen2,
};

// The pattern `regex` spells, compared character for character with the spellings above (and
// the Hugging Face files' own); nullopt for any other.
std::optional<SplitPattern> RecognizePattern(std::string_view regex);

// The pieces of `text`, which must be valid UTF-8 (utf8::ToValid). \s is the White_Space
// property and (?i:...) folds ASCII letters only.
std::vector<std::string_view> SplitText(std::string_view text, SplitPattern pattern);

}  // namespace gradsync::tokenizer

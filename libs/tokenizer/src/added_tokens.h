// A tokenizer.json's added tokens (special tokens such as "<|endoftext|>" among them): found in
// the text before anything else, each occurrence one id, as Hugging Face's AddedVocabulary does.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gradsync::tokenizer {

struct AddedToken {
  int32_t id = 0;
  std::string content;  // non-empty, valid UTF-8
  bool lstrip = false;  // the token takes the whitespace before it
  bool rstrip = false;  // and after it
};

// A stretch of text: an added token (`id` >= 0) or text to pre-tokenize (`id` == -1).
struct Segment {
  std::string_view text;
  int32_t id = -1;
};

class AddedTokens {
 public:
  explicit AddedTokens(std::vector<AddedToken> tokens);

  // `text` (valid UTF-8) cut at the added tokens it holds: the leftmost occurrence first, the
  // longest token where several start at one place. Segments concatenate back to `text`; a
  // token's segment includes the whitespace its lstrip/rstrip take.
  std::vector<Segment> Split(std::string_view text) const;

 private:
  std::vector<AddedToken> tokens_;
  // Indices into tokens_ by the first byte of the content, longest content first.
  std::array<std::vector<size_t>, 256> by_first_byte_;
};

}  // namespace gradsync::tokenizer

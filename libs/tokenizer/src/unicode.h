// Unicode for the pre-tokenizers: the classes their patterns test, and UTF-8 read as the WHATWG
// decoder reads it (what JavaScript's TextDecoder and Python's errors="replace" do).
#pragma once

#include <string>
#include <string_view>

namespace gradsync::tokenizer::unicode {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

bool IsLetter(char32_t c);      // General_Category L
bool IsNumber(char32_t c);      // General_Category N
bool IsWhiteSpace(char32_t c);  // the White_Space property

// One character read from UTF-8.
struct DecodedChar {
  char32_t code_point;  // kReplacementCharacter for an ill-formed subsequence
  int length;           // bytes read, at least 1
  bool valid;           // false for an ill-formed subsequence
};

// The character at `pos` (< text.size()). An ill-formed subsequence reads as U+FFFD and is
// as long as its maximal subpart: the longest prefix of a well-formed sequence, at least one
// byte (Unicode's "best practice for U+FFFD substitution", which WHATWG's decoder follows).
DecodedChar DecodeUtf8(std::string_view text, size_t pos);

// `text` with each ill-formed subsequence replaced by U+FFFD's three bytes; valid UTF-8 is
// returned unchanged.
std::string ToValidUtf8(std::string_view text);

void AppendUtf8(char32_t code_point, std::string* out);

}  // namespace gradsync::tokenizer::unicode

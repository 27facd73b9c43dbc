// UTF-8, read once for the whole project: the spec's check of its strings, JSON output's escaping and
// the tokenizers' decoding all take their well-formed sequences from here. Well-formed is table
// 3-7 of the Unicode standard: no overlong forms, no surrogates, nothing past U+10FFFF, no
// truncated sequence; an ill-formed subsequence reads as WHATWG's decoder reads it (what
// JavaScript's TextDecoder and Python's errors="replace" do).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gradsync::utf8 {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

// One character read from UTF-8.
struct DecodedChar {
  char32_t code_point;  // kReplacementCharacter for an ill-formed subsequence
  int length;           // bytes read, at least 1
  bool valid;           // false for an ill-formed subsequence
};

// The character at `pos` (< text.size()). An ill-formed subsequence reads as U+FFFD and is as long
// as its maximal subpart: the longest prefix of a well-formed sequence, at least one byte
// (Unicode's "best practice for U+FFFD substitution").
DecodedChar Decode(std::string_view text, size_t pos);

// How many bytes `text` starts with that are well-formed UTF-8 (text.size() when all are).
size_t ValidPrefix(std::string_view text);
bool IsValid(std::string_view text);

// `text` with each ill-formed subsequence replaced by U+FFFD's three bytes; valid UTF-8 is
// returned unchanged.
std::string ToValid(std::string_view text);

void Append(char32_t code_point, std::string* out);

}  // namespace gradsync::utf8

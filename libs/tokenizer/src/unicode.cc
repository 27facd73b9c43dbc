#include "unicode.h"

#include <algorithm>
#include <span>

#include "unicode_tables.h"

namespace gradsync::tokenizer::unicode {
namespace {

bool InRanges(std::span<const CodePointRange> ranges, char32_t c) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), c,
                             [](char32_t v, const CodePointRange& r) { return v < r.first; });
  return it != ranges.begin() && c <= std::prev(it)->last;
}

}  // namespace

bool IsLetter(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  return InRanges(LetterRanges(), c);
}

bool IsNumber(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return InRanges(NumberRanges(), c);
}

bool IsWhiteSpace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  return InRanges(WhiteSpaceRanges(), c);
}

}  // namespace gradsync::tokenizer::unicode

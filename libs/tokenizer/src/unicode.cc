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

bool IsContinuation(unsigned char b, unsigned char low = 0x80, unsigned char high = 0xBF) {
  return b >= low && b <= high;
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

// Table 3-7 of the Unicode standard (well-formed byte sequences): the lead byte fixes the length
// and the range of the second byte; later bytes are 80..BF.
DecodedChar DecodeUtf8(std::string_view text, size_t pos) {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  if (b0 < 0x80) return {b0, 1, true};
  int need = 0;
  unsigned char low = 0x80, high = 0xBF;
  char32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1, cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2, cp = b0 & 0x0F;
    if (b0 == 0xE0) low = 0xA0;
    if (b0 == 0xED) high = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3, cp = b0 & 0x07;
    if (b0 == 0xF0) low = 0x90;
    if (b0 == 0xF4) high = 0x8F;
  } else {
    return {kReplacementCharacter, 1, false};
  }
  for (int i = 1; i <= need; ++i) {
    if (pos + i >= text.size()) return {kReplacementCharacter, i, false};
    const auto b = static_cast<unsigned char>(text[pos + i]);
    if (!(i == 1 ? IsContinuation(b, low, high) : IsContinuation(b))) return {kReplacementCharacter, i, false};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, need + 1, true};
}

std::string ToValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const DecodedChar c = DecodeUtf8(text, pos);
    if (!c.valid) {
      AppendUtf8(kReplacementCharacter, &out);
    } else {
      out.append(text.substr(pos, static_cast<size_t>(c.length)));
    }
    pos += static_cast<size_t>(c.length);
  }
  return out;
}

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace gradsync::tokenizer::unicode

#include "gradsync/core/utf8.h"

namespace gradsync::utf8 {
namespace {

bool IsContinuation(unsigned char b, unsigned char low = 0x80, unsigned char high = 0xBF) {
  return b >= low && b <= high;
}

}  // namespace

// Table 3-7 of the Unicode standard (well-formed byte sequences): the lead byte fixes the length
// and the range of the second byte; later bytes are 80..BF.
DecodedChar Decode(std::string_view text, size_t pos) {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  if (b0 < 0x80) return {b0, 1, true};
  int need = 0;
  unsigned char low = 0x80, high = 0xBF;
  char32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1, cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2, cp = b0 & 0x0F;
    if (b0 == 0xE0) low = 0xA0;  // no overlong forms
    if (b0 == 0xED) high = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3, cp = b0 & 0x07;
    if (b0 == 0xF0) low = 0x90;  // no overlong forms
    if (b0 == 0xF4) high = 0x8F;  // nothing past U+10FFFF
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

size_t ValidPrefix(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const DecodedChar c = Decode(text, pos);
    if (!c.valid) return pos;
    pos += static_cast<size_t>(c.length);
  }
  return text.size();
}

bool IsValid(std::string_view text) { return ValidPrefix(text) == text.size(); }

std::string ToValid(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const DecodedChar c = Decode(text, pos);
    if (!c.valid) {
      Append(kReplacementCharacter, &out);
    } else {
      out.append(text.substr(pos, static_cast<size_t>(c.length)));
    }
    pos += static_cast<size_t>(c.length);
  }
  return out;
}

void Append(char32_t c, std::string* out) {
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

}  // namespace gradsync::utf8

#include "gradsync/core/json_string.h"

#include <cstdint>

namespace gradsync {
namespace {

constexpr char kReplacement[] = "\\ufffd";
constexpr char kHex[] = "0123456789abcdef";

bool IsContinuation(std::string_view s, size_t i, uint8_t low = 0x80, uint8_t high = 0xbf) {
  if (i >= s.size()) return false;
  const auto c = static_cast<uint8_t>(s[i]);
  return c >= low && c <= high;
}

// The length of the well-formed UTF-8 sequence of two or more bytes at s[i], or 0 (the Unicode
// standard's table 3-7: the second byte's range depends on the first).
size_t MultiByteLength(std::string_view s, size_t i) {
  const auto c = static_cast<uint8_t>(s[i]);
  if (c >= 0xc2 && c <= 0xdf) return IsContinuation(s, i + 1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const uint8_t low = c == 0xe0 ? 0xa0 : 0x80;   // no overlong forms
    const uint8_t high = c == 0xed ? 0x9f : 0xbf;  // no surrogates
    return IsContinuation(s, i + 1, low, high) && IsContinuation(s, i + 2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const uint8_t low = c == 0xf0 ? 0x90 : 0x80;   // no overlong forms
    const uint8_t high = c == 0xf4 ? 0x8f : 0xbf;  // nothing past U+10FFFF
    return IsContinuation(s, i + 1, low, high) && IsContinuation(s, i + 2) && IsContinuation(s, i + 3) ? 4 : 0;
  }
  return 0;
}

void AppendAscii(std::string* out, char c) {
  switch (c) {
    case '"': out->append("\\\""); return;
    case '\\': out->append("\\\\"); return;
    case '\b': out->append("\\b"); return;
    case '\f': out->append("\\f"); return;
    case '\n': out->append("\\n"); return;
    case '\r': out->append("\\r"); return;
    case '\t': out->append("\\t"); return;
    default: break;
  }
  const auto u = static_cast<uint8_t>(c);
  if (u < 0x20 || u == 0x7f) {
    out->append("\\u00");
    out->push_back(kHex[u >> 4]);
    out->push_back(kHex[u & 0xf]);
    return;
  }
  out->push_back(c);
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      AppendAscii(out, s[i++]);
      continue;
    }
    const size_t n = MultiByteLength(s, i);
    if (n == 0) {
      out->append(kReplacement);
      ++i;
      continue;
    }
    out->append(s.substr(i, n));
    i += n;
  }
  out->push_back('"');
}

std::string JsonString(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  AppendJsonString(&out, s);
  return out;
}

}  // namespace gradsync

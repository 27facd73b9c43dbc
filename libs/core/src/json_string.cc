#include "gradsync/core/json_string.h"

#include <cstdint>

#include "gradsync/core/utf8.h"

namespace gradsync {
namespace {

constexpr char kReplacement[] = "\\ufffd";
constexpr char kHex[] = "0123456789abcdef";

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
    // An ill-formed byte becomes U+FFFD alone; the bytes after it are read afresh.
    const utf8::DecodedChar c = utf8::Decode(s, i);
    if (!c.valid) {
      out->append(kReplacement);
      ++i;
      continue;
    }
    out->append(s.substr(i, static_cast<size_t>(c.length)));
    i += static_cast<size_t>(c.length);
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

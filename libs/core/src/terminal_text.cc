#include "gradsync/core/terminal_text.h"

#include "absl/strings/str_format.h"
#include "gradsync/core/utf8.h"

namespace gradsync {
namespace {

bool IsControl(char32_t c) { return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f); }

void AppendEscaped(char32_t c, std::string* out) {
  switch (c) {
    case '\n': *out += "\\n"; return;
    case '\r': *out += "\\r"; return;
    case '\t': *out += "\\t"; return;
    default: break;
  }
  *out += c < 0x80 ? absl::StrFormat("\\x%02x", static_cast<unsigned>(c))
                   : absl::StrFormat("\\u%04x", static_cast<unsigned>(c));
}

}  // namespace

std::string TerminalSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const utf8::DecodedChar d = utf8::Decode(text, pos);
    if (!d.valid) {
      for (int i = 0; i < d.length; ++i) {
        absl::StrAppendFormat(&out, "\\x%02x", static_cast<unsigned char>(text[pos + static_cast<size_t>(i)]));
      }
    } else if (IsControl(d.code_point)) {
      AppendEscaped(d.code_point, &out);
    } else {
      out.append(text.substr(pos, static_cast<size_t>(d.length)));
    }
    pos += static_cast<size_t>(d.length);
  }
  return out;
}

}  // namespace gradsync

// JSON string literals for text the process does not control (log messages, paths).
#pragma once

#include <string>
#include <string_view>

namespace gradsync {

// Appends `s` to `out` as a JSON string literal, quoted: quotes and backslashes escaped, control
// characters as \n, \t, ... or \u00XX, DEL as \u007f, and each byte that is not part of valid
// UTF-8 (stray continuation bytes, overlong forms, surrogates, values past U+10FFFF, truncated
// sequences) as U+FFFD, so that the result is always valid JSON and valid UTF-8.
void AppendJsonString(std::string* out, std::string_view s);

// The same, returned.
std::string JsonString(std::string_view s);

}  // namespace gradsync

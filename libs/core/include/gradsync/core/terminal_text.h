// Text that came from elsewhere (a worker's log line or host name, a server's answer, a file name,
// an error a rank reported) as a terminal or a log line may show it: every control character (C0,
// DEL, and C1 such as U+009B, a CSI on some terminals) is written as a visible escape (\n, \r, \t,
// \x1b, \u009b), and every byte of ill-formed UTF-8 as \xHH, so that no escape sequence reaches a
// terminal (no title change, screen clear or OSC 52 clipboard write) and no line break forges a
// line. Printable UTF-8 is unchanged. JSON output needs none of this: JSON escapes its own.
#pragma once

#include <string>
#include <string_view>

namespace gradsync {

std::string TerminalSafe(std::string_view text);

}  // namespace gradsync

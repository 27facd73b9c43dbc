#include "gradsync/core/log_line.h"

#include <cctype>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "gradsync/core/terminal_text.h"

namespace gradsync {

std::string LogLineText(const v1::LogLine& line) {
  // Only a letter: a level from a server that does not bound it may start with anything.
  const unsigned char first = line.level().empty() ? '?' : static_cast<unsigned char>(line.level()[0]);
  const char level = std::isalpha(first) ? static_cast<char>(std::toupper(first)) : '?';
  const absl::Time t = absl::FromUnixSeconds(line.time().seconds()) + absl::Nanoseconds(line.time().nanos());
  return absl::StrFormat("%c %s r%d g%d %s] %s\n", level,
                         absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone()), line.rank(),
                         line.generation(), TerminalSafe(line.source()), TerminalSafe(line.message()));
}

}  // namespace gradsync

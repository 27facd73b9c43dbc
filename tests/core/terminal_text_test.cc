// TerminalSafe: what a terminal may be shown of text from elsewhere.
#include "gradsync/core/terminal_text.h"

#include <string>

#include "gtest/gtest.h"

namespace gradsync {
namespace {

TEST(TerminalSafe, PrintableTextIsUnchanged) {
  EXPECT_EQ(TerminalSafe("rank 1: loss 0.25 (ünïcödé, 日本, C:\\data)"), "rank 1: loss 0.25 (ünïcödé, 日本, C:\\data)");
}

TEST(TerminalSafe, EscapeSequencesAndLineBreaksBecomeVisible) {
  // A title change, a screen clear, an OSC 52 clipboard write, a forged log line, a C1 CSI.
  EXPECT_EQ(TerminalSafe("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
  EXPECT_EQ(TerminalSafe("\x1b[2J\x1b[H"), "\\x1b[2J\\x1b[H");
  EXPECT_EQ(TerminalSafe("\x1b]52;c;ZWNobyBoaQ==\x07"), "\\x1b]52;c;ZWNobyBoaQ==\\x07");
  EXPECT_EQ(TerminalSafe("done\nI 2026-11-29 r7 g1 x.cc:1] forged"), "done\\nI 2026-11-29 r7 g1 x.cc:1] forged");
  EXPECT_EQ(TerminalSafe("a\r\tb\x7f"), "a\\r\\tb\\x7f");
  EXPECT_EQ(TerminalSafe("\xc2\x9b" "31m"), "\\u009b31m");
}

TEST(TerminalSafe, IllFormedUtf8IsShownByteByByteAndTheResultIsStable) {
  EXPECT_EQ(TerminalSafe("a\xff\xfe" "b"), "a\\xff\\xfeb");
  EXPECT_EQ(TerminalSafe("\xe6\x97"), "\\xe6\\x97");
  const std::string once = TerminalSafe("\x1b[31mred\n\xff");
  EXPECT_EQ(TerminalSafe(once), once);
}

}  // namespace
}  // namespace gradsync

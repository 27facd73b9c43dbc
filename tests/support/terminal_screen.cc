#include "terminal_screen.h"

#include <algorithm>
#include <cctype>

namespace gradsync::testing {

void TerminalScreen::Put(char c) {
  if (pending_wrap_) {
    wrapped_.push_back(Row());
    ++row_;
    column_ = 0;
    pending_wrap_ = false;
  }
  Row()[column_] = c;
  if (column_ + 1 == columns_) {
    pending_wrap_ = true;
  } else {
    ++column_;
  }
}

void TerminalScreen::Write(const std::string& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    const char c = out[i];
    if (c == '\r') {
      column_ = 0;
      pending_wrap_ = false;
    } else if (c == '\n') {
      ++row_;
      column_ = 0;  // the pty turns \n into \r\n (onlcr)
      pending_wrap_ = false;
      Row();
    } else if (c == '\033' && i + 1 < out.size() && out[i + 1] == '[') {
      size_t j = i + 2;
      int n = 0;
      bool any = false;
      while (j < out.size() && std::isdigit(static_cast<unsigned char>(out[j]))) {
        n = n * 10 + (out[j++] - '0');
        any = true;
      }
      if (j >= out.size()) return;
      const char op = out[j];
      if (op == 'A') {
        row_ = std::max(0, row_ - (any ? n : 1));
      } else if (op == 'J') {
        Row().replace(column_, std::string::npos, std::string(columns_ - column_, ' '));
        rows_.resize(row_ + 1);
      } else if (op == 'K') {
        Row().replace(column_, std::string::npos, std::string(columns_ - column_, ' '));
      }
      pending_wrap_ = false;
      i = j;
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      // A UTF-8 character takes one column: only its first byte moves the cursor.
      if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) Put(c);
    }
  }
}

std::vector<std::string> TerminalScreen::Rows() const {
  std::vector<std::string> rows;
  for (std::string r : rows_) {
    r.erase(r.find_last_not_of(' ') + 1);
    rows.push_back(r);
  }
  while (!rows.empty() && rows.back().empty()) rows.pop_back();
  return rows;
}

}  // namespace gradsync::testing

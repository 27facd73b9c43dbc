// A terminal's screen as a program's output leaves it, for tests of what a person sees: a grid
// `columns` wide that wraps at its right edge as a terminal does, with the few controls the CLI
// writes (\r, \n, ESC[nA cursor up, ESC[J erase to the end of the screen, ESC[K erase the line).
// Any other escape sequence is skipped. Rows scrolled off the top are kept (scrollback).
#pragma once

#include <string>
#include <vector>

namespace gradsync::testing {

class TerminalScreen {
 public:
  explicit TerminalScreen(int columns) : columns_(columns) {}

  // Plays `output` onto the screen.
  void Write(const std::string& output);

  // Every row, scrollback first, trailing blanks cut; empty rows at the end dropped.
  std::vector<std::string> Rows() const;
  // How many times a character landed past the right edge and the terminal wrapped it.
  int wraps() const { return static_cast<int>(wrapped_.size()); }
  // Each row that overflowed, as it stood when it did.
  const std::vector<std::string>& wrapped() const { return wrapped_; }

 private:
  void Put(char c);
  std::string& Row() {
    if (row_ >= static_cast<int>(rows_.size())) rows_.resize(row_ + 1, std::string(columns_, ' '));
    return rows_[row_];
  }

  int columns_;
  std::vector<std::string> rows_;
  int row_ = 0, column_ = 0;
  std::vector<std::string> wrapped_;
  bool pending_wrap_ = false;  // the last column was written: the next character wraps
};

}  // namespace gradsync::testing

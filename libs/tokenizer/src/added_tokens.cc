#include "added_tokens.h"

#include <algorithm>

#include "gradsync/core/utf8.h"
#include "unicode.h"

namespace gradsync::tokenizer {
namespace {

// The start of the whitespace that ends text[floor, end).
size_t WhitespaceBefore(std::string_view text, size_t floor, size_t end) {
  while (end > floor) {
    size_t start = end - 1;
    while (start > floor && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    if (!unicode::IsWhiteSpace(utf8::Decode(text, start).code_point)) break;
    end = start;
  }
  return end;
}

// The end of the whitespace that starts at text[start].
size_t WhitespaceAfter(std::string_view text, size_t start) {
  while (start < text.size()) {
    const utf8::DecodedChar c = utf8::Decode(text, start);
    if (!unicode::IsWhiteSpace(c.code_point)) break;
    start += static_cast<size_t>(c.length);
  }
  return start;
}

}  // namespace

AddedTokens::AddedTokens(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    by_first_byte_[static_cast<uint8_t>(tokens_[i].content[0])].push_back(i);
  }
  for (std::vector<size_t>& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(),
                     [&](size_t a, size_t b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
  }
}

std::vector<Segment> AddedTokens::Split(std::string_view text) const {
  std::vector<Segment> segments;
  size_t text_start = 0;  // where the text not yet in a segment starts
  for (size_t pos = 0; pos < text.size(); ++pos) {
    const AddedToken* found = nullptr;
    for (size_t i : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
      if (text.substr(pos).starts_with(tokens_[i].content)) {
        found = &tokens_[i];
        break;
      }
    }
    if (found == nullptr) continue;
    const size_t start = found->lstrip ? WhitespaceBefore(text, text_start, pos) : pos;
    size_t end = pos + found->content.size();
    if (found->rstrip) end = WhitespaceAfter(text, end);
    if (start > text_start) segments.push_back({text.substr(text_start, start - text_start), -1});
    segments.push_back({text.substr(start, end - start), found->id});
    text_start = end;
    pos = end - 1;
  }
  if (text_start < text.size()) segments.push_back({text.substr(text_start), -1});
  return segments;
}

}  // namespace gradsync::tokenizer

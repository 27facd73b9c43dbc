#include "pre_tokenizer.h"

#include <string>

#include "gradsync/core/utf8.h"
#include "unicode.h"

namespace gradsync::tokenizer {
namespace {

constexpr std::string_view kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum class CharClass { kLetter, kNumber, kSpace, kOther };

CharClass Classify(char32_t c) {
  if (unicode::IsLetter(c)) return CharClass::kLetter;
  if (unicode::IsNumber(c)) return CharClass::kNumber;
  if (unicode::IsWhiteSpace(c)) return CharClass::kSpace;
  return CharClass::kOther;
}

bool IsNewline(char32_t c) { return c == '\r' || c == '\n'; }

// The text as characters and their classes; Match* return the end (a character index) of the
// match that starts at character i.
class Scanner {
 public:
  explicit Scanner(std::string_view text) {
    for (size_t pos = 0; pos < text.size();) {
      const utf8::DecodedChar c = utf8::Decode(text, pos);
      chars_.push_back(c.code_point);
      classes_.push_back(Classify(c.code_point));
      offsets_.push_back(pos);
      pos += static_cast<size_t>(c.length);
    }
    offsets_.push_back(text.size());
  }

  size_t size() const { return chars_.size(); }
  size_t offset(size_t i) const { return offsets_[i]; }

  size_t MatchGpt2(size_t i) const {
    if (size_t end = Contraction(i, /*fold_case=*/false); end > i) return end;
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then a run of one class.
    size_t start = i;
    if (chars_[i] == ' ' && i + 1 < size() && classes_[i + 1] != CharClass::kSpace) start = i + 1;
    if (classes_[start] != CharClass::kSpace) return RunOf(start, classes_[start]);
    return Whitespace(i);
  }

  size_t MatchLlama3(size_t i, size_t max_digits) const {
    if (size_t end = Contraction(i, /*fold_case=*/true); end > i) return end;
    // [^\r\n\p{L}\p{N}]?\p{L}+
    const CharClass c = classes_[i];
    if (c == CharClass::kLetter) return RunOf(i, CharClass::kLetter);
    if (!IsNewline(chars_[i]) && c != CharClass::kNumber && i + 1 < size() && classes_[i + 1] == CharClass::kLetter) {
      return RunOf(i + 1, CharClass::kLetter);
    }
    // \p{N}{1,k}
    if (c == CharClass::kNumber) return std::min(RunOf(i, CharClass::kNumber), i + max_digits);
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
    size_t start = i;
    if (chars_[i] == ' ' && i + 1 < size() && classes_[i + 1] == CharClass::kOther) start = i + 1;
    if (classes_[start] == CharClass::kOther) {
      size_t end = RunOf(start, CharClass::kOther);
      while (end < size() && IsNewline(chars_[end])) ++end;
      return end;
    }
    // `\s*[\r\n]+`: \s* gives back characters until [\r\n]+ can match; the last newline of the
    // run ends the match (the characters after it are spaces but not newlines).
    const size_t run_end = RunOf(i, CharClass::kSpace);
    for (size_t j = run_end; j > i; --j) {
      if (IsNewline(chars_[j - 1])) return j;
    }
    return Whitespace(i);
  }

 private:
  // 's|'t|'re|'ve|'m|'ll|'d at i, or i.
  size_t Contraction(size_t i, bool fold_case) const {
    if (chars_[i] != '\'' || i + 1 >= size()) return i;
    const auto at = [&](size_t k) -> char32_t {
      if (k >= size()) return 0;
      const char32_t c = chars_[k];
      return fold_case && c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
    };
    const char32_t a = at(i + 1), b = at(i + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    return i;
  }

  size_t RunOf(size_t i, CharClass c) const {
    while (i < size() && classes_[i] == c) ++i;
    return i;
  }

  // `\s+(?!\S)|\s+` at a space: a run that ends the text, or is followed by a non-space, gives
  // back its last character to that non-space's piece (unless the run is one character).
  size_t Whitespace(size_t i) const {
    const size_t end = RunOf(i, CharClass::kSpace);
    if (end == size() || end - i == 1) return end;
    return end - 1;
  }

  std::u32string chars_;
  std::vector<CharClass> classes_;
  std::vector<size_t> offsets_;
};

}  // namespace

std::optional<SplitPattern> RecognizePattern(std::string_view regex) {
  if (regex == kGpt2Regex) return SplitPattern::kGpt2;
  if (regex == kLlama3Regex) return SplitPattern::kLlama3;
  if (regex == kQwen2Regex) return SplitPattern::kQwen2;
  return std::nullopt;
}

std::vector<std::string_view> SplitText(std::string_view text, SplitPattern pattern) {
  const Scanner scanner(text);
  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < scanner.size();) {
    size_t end = 0;
    switch (pattern) {
      case SplitPattern::kGpt2: end = scanner.MatchGpt2(i); break;
      case SplitPattern::kLlama3: end = scanner.MatchLlama3(i, 3); break;
      case SplitPattern::kQwen2: end = scanner.MatchLlama3(i, 1); break;
    }
    pieces.push_back(text.substr(scanner.offset(i), scanner.offset(end) - scanner.offset(i)));
    i = end;
  }
  return pieces;
}

}  // namespace gradsync::tokenizer

// A walk over YAML text that follows yaml-cpp 0.7's scanner (src/scanner.cpp, scantoken.cpp,
// scanscalar.cpp, simplekey.cpp of that release) step for step where it decides token boundaries,
// indentation and simple keys, and keeps only what the nesting needs: the indentation stack, the
// open flow collections and the pending simple keys. Scalars are skipped, not built.
//
// Why the depth found here bounds yaml-cpp's: its parser opens one collection per block-start
// token, which its scanner emits exactly when it pushes an indentation (PushIndentTo), and one per
// flow-start token (plus, inside a flow list, one compact map per entry written `key: value`). This
// scan pushes and pops the same indentations at the same characters and counts the valid ones on
// the stack (a simple key's start token holds the parser back until the key is verified) plus the
// open flow collections. So the parser nests at most 2 * max_nesting collections deep when the scan
// passes, and max_nesting deep when no flow list holds a `key: value` entry.
#include "yaml_shape.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync::spec::internal {
namespace {

// The text holds no NUL (checked before the scan), so NUL marks its end.
constexpr char kEnd = '\0';
constexpr char kUtf8Bom[] = "\xEF\xBB\xBF";
// A simple key must end within this many characters of its start (yaml-cpp's rule).
constexpr size_t kMaxSimpleKeyLength = 1024;

enum class IndentKind { kNone, kSeq, kMap };
enum class IndentStatus { kValid, kInvalid, kUnknown };

struct Indent {
  int column;
  IndentKind kind;
  IndentStatus status = IndentStatus::kValid;
  bool open = true;  // still on the indentation stack
};

struct SimpleKey {
  size_t pos;
  int line;
  size_t flow_level;
  int indent;  // index into the indentations ever pushed, or -1
};

// How a scalar ends, as yaml-cpp's ScanScalarParams::end says.
enum class ScalarEnd { kText, kPlainBlock, kPlainFlow, kSingleQuote, kDoubleQuote };
enum class OnDocIndicator { kNone, kBreak, kThrow };

struct ScalarParams {
  ScalarEnd end;
  bool eat_end = false;
  int indent = 0;
  bool detect_indent = false;
  bool eat_leading_whitespace = false;
  char escape = 0;
  OnDocIndicator on_doc_indicator = OnDocIndicator::kNone;
  bool throw_on_tab_in_indentation = false;
  bool leading_spaces = false;  // out: the scalar ended by starting a less indented line
};

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool OneOf(char c, const char* set) { return c != kEnd && std::strchr(set, c) != nullptr; }

class ShapeScanner {
 public:
  ShapeScanner(absl::string_view text, int max_nesting) : text_(text), max_nesting_(max_nesting) {
    if (text_.substr(0, 3) == kUtf8Bom) pos_ = 3;
    indents_.push_back({-1, IndentKind::kNone});
    stack_.push_back(0);
  }

  absl::StatusOr<std::string> Run() {
    while (NextToken() && status_.ok()) {
    }
    if (!status_.ok()) return status_;
    std::string out;
    size_t from = 0;
    for (const auto& [at, replacement] : edits_) {
      absl::StrAppend(&out, text_.substr(from, at - from), replacement);
      from = at + kPairLength;
    }
    absl::StrAppend(&out, text_.substr(from));
    return out;
  }

 private:
  static constexpr size_t kPairLength = 12;  // "\ud83d\ude80"

  // ---- the input, as yaml-cpp's Stream and its regular expressions see it
  char At(size_t k) const { return pos_ + k < text_.size() ? text_[pos_ + k] : kEnd; }
  bool More() const { return pos_ < text_.size(); }
  void Eat(size_t n) {
    for (; n > 0 && More(); --n, ++pos_) {
      ++column_;
      if (text_[pos_] == '\n') {
        column_ = 0;
        ++line_;
      }
    }
  }
  size_t BreakAt(size_t k) const {
    if (At(k) == '\n') return 1;
    return At(k) == '\r' && At(k + 1) == '\n' ? 2 : 0;
  }
  size_t BlankOrBreakAt(size_t k) const { return IsBlank(At(k)) ? 1 : BreakAt(k); }
  bool EndOrBlankOrBreakAt(size_t k) const { return pos_ + k >= text_.size() || BlankOrBreakAt(k) > 0; }
  bool CommentAfterBlankAt(size_t k) const {
    const size_t n = BlankOrBreakAt(k);
    return n > 0 && At(k + n) == '#';
  }
  bool DocIndicatorHere() const {
    const absl::string_view rest = text_.substr(pos_, 3);
    return column_ == 0 && (rest == "---" || rest == "...") && EndOrBlankOrBreakAt(3);
  }
  bool BlockEntryHere() const { return At(0) == '-' && EndOrBlankOrBreakAt(1); }

  bool InBlock() const { return flows_.empty(); }
  int TopIndent() const { return indents_[stack_.back()].column; }

  bool Refuse(absl::string_view problem) {
    status_ = absl::InvalidArgumentError(absl::StrCat("line ", line_ + 1, ", column ", column_ + 1, ": ", problem));
    return false;
  }
  // The parser sees a block collection once its indentation is valid: an unverified simple key's
  // start token holds the parser back until the key is verified or dropped.
  void CheckNesting() {
    const size_t depth = valid_open_ + flows_.size();
    if (depth > static_cast<size_t>(max_nesting_) && status_.ok()) {
      Refuse(absl::StrCat("maps and lists nest deeper than the limit of ", max_nesting_, " levels"));
    }
  }

  // ---- indentation and simple keys (yaml-cpp's PushIndentTo, PopIndentToHere, SimpleKey)
  int PushIndentTo(int column, IndentKind kind) {
    if (!InBlock()) return -1;
    const Indent& last = indents_[stack_.back()];
    if (column < last.column) return -1;
    if (column == last.column && !(kind == IndentKind::kSeq && last.kind == IndentKind::kMap)) return -1;
    indents_.push_back({column, kind});
    stack_.push_back(static_cast<int>(indents_.size() - 1));
    ++valid_open_;
    CheckNesting();
    return stack_.back();
  }
  void SetStatus(int index, IndentStatus status) {
    Indent& indent = indents_[index];
    if (indent.open) valid_open_ += (status == IndentStatus::kValid) - (indent.status == IndentStatus::kValid);
    indent.status = status;
    CheckNesting();
  }
  void PopIndent() {
    Indent& indent = indents_[stack_.back()];
    stack_.pop_back();
    indent.open = false;
    if (indent.status == IndentStatus::kValid) --valid_open_;
    if (indent.status != IndentStatus::kValid) InvalidateSimpleKey();
  }
  void PopIndentToHere() {
    if (!InBlock()) return;
    while (!stack_.empty()) {
      const Indent& top = indents_[stack_.back()];
      if (top.column < column_) break;
      if (top.column == column_ && !(top.kind == IndentKind::kSeq && !BlockEntryHere())) break;
      PopIndent();
    }
    while (!stack_.empty() && indents_[stack_.back()].status == IndentStatus::kInvalid) PopIndent();
  }
  void PopAllIndents() {
    if (!InBlock()) return;
    while (indents_[stack_.back()].kind != IndentKind::kNone) PopIndent();
  }
  bool KeyAtThisLevel() const { return !keys_.empty() && keys_.back().flow_level == flows_.size(); }
  void InsertSimpleKey() {
    if (!simple_key_allowed_ || KeyAtThisLevel()) return;
    SimpleKey key{pos_, line_, flows_.size(), -1};
    if (InBlock()) {
      key.indent = PushIndentTo(column_, IndentKind::kMap);
      if (key.indent >= 0) SetStatus(key.indent, IndentStatus::kUnknown);
    }
    keys_.push_back(key);
  }
  void InvalidateSimpleKey() {
    if (!KeyAtThisLevel()) return;
    if (keys_.back().indent >= 0) SetStatus(keys_.back().indent, IndentStatus::kInvalid);
    keys_.pop_back();
  }
  bool VerifySimpleKey() {
    if (!KeyAtThisLevel()) return false;
    const SimpleKey key = keys_.back();
    keys_.pop_back();
    const bool valid = line_ == key.line && pos_ - key.pos <= kMaxSimpleKeyLength;
    if (key.indent >= 0) SetStatus(key.indent, valid ? IndentStatus::kValid : IndentStatus::kInvalid);
    return valid;
  }

  // ---- tokens (yaml-cpp's ScanNextToken and the Scan* functions it calls). Each returns false
  // where yaml-cpp throws (the scan stops there) or where this scan refuses the text.
  bool NextToken() {
    SkipToToken();
    PopIndentToHere();
    if (!More()) return false;
    const char c = At(0);
    if (column_ == 0 && c == '%') return Refuse("directives (%) are not supported in a job spec");
    if (DocIndicatorHere()) return DocumentMarker();
    if (c == '[' || c == '{') return FlowStart();
    if (c == ']' || c == '}') return FlowEnd();
    if (c == ',') return FlowEntry();
    if (BlockEntryHere()) return BlockEntry();
    if (c == '?' && BlankOrBreakAt(1) > 0) return Key();
    if (ValueHere()) return Value();
    if (c == '&' || c == '*') return Refuse("anchors (&) and aliases (*) are not supported in a job spec");
    if (c == '!') return Refuse("tags (!) are not supported in a job spec");
    if (InBlock() && (c == '|' || c == '>')) return BlockScalar();
    if (c == '\'' || c == '"') return QuotedScalar();
    if (PlainScalarHere()) return PlainScalar();
    return false;
  }

  void SkipToToken() {
    for (;;) {
      while (IsBlank(At(0))) {
        if (InBlock() && At(0) == '\t') simple_key_allowed_ = false;
        Eat(1);
      }
      if (At(0) == '#') {
        while (More() && BreakAt(0) == 0) Eat(1);
      }
      const size_t n = BreakAt(0);
      if (n == 0) return;
      Eat(n);
      InvalidateSimpleKey();
      if (InBlock()) simple_key_allowed_ = true;
    }
  }

  bool ValueHere() const {
    if (At(0) != ':') return false;
    if (InBlock()) return EndOrBlankOrBreakAt(1);
    return can_be_json_flow_ || BlankOrBreakAt(1) > 0 || OneOf(At(1), ",]}");
  }
  bool PlainScalarHere() const {
    const char c = At(0);
    if (BlankOrBreakAt(0) > 0) return false;
    if (InBlock()) return !OneOf(c, ",[]{}#&*!|>'\"%@`") && !(OneOf(c, "-?:") && EndOrBlankOrBreakAt(1));
    return !OneOf(c, "?,[]{}#&*!|>'\"%@`") && !(OneOf(c, "-:") && (IsBlank(At(1)) || pos_ + 1 >= text_.size()));
  }

  bool DocumentMarker() {
    PopAllIndents();
    keys_.clear();
    simple_key_allowed_ = false;
    can_be_json_flow_ = false;
    Eat(3);
    return true;
  }
  bool FlowStart() {
    InsertSimpleKey();
    simple_key_allowed_ = true;
    can_be_json_flow_ = false;
    flows_.push_back(At(0));
    CheckNesting();
    Eat(1);
    return true;
  }
  // A `,` or a flow end first settles the entry's simple key.
  void EndFlowEntry() {
    if (InBlock()) return;
    if (flows_.back() == '{') {
      VerifySimpleKey();
    } else {
      InvalidateSimpleKey();
    }
  }
  bool FlowEnd() {
    if (InBlock()) return false;
    EndFlowEntry();
    simple_key_allowed_ = false;
    can_be_json_flow_ = true;
    const char open = At(0) == ']' ? '[' : '{';
    if (flows_.back() != open) return false;
    flows_.pop_back();
    Eat(1);
    return true;
  }
  // yaml-cpp 0.7 takes a `,` outside any flow collection as a flow entry and then allocates
  // without end (a one-byte document "," exhausts memory); YAML has no such token.
  bool FlowEntry() {
    if (InBlock()) return Refuse("',' outside a flow list or map ([...] or {...})");
    EndFlowEntry();
    simple_key_allowed_ = true;
    can_be_json_flow_ = false;
    Eat(1);
    return true;
  }
  bool BlockEntry() {
    if (!InBlock() || !simple_key_allowed_) return false;
    PushIndentTo(column_, IndentKind::kSeq);
    simple_key_allowed_ = true;
    can_be_json_flow_ = false;
    Eat(1);
    return true;
  }
  bool Key() {
    if (InBlock()) {
      if (!simple_key_allowed_) return false;
      PushIndentTo(column_, IndentKind::kMap);
    }
    simple_key_allowed_ = InBlock();
    Eat(1);
    return true;
  }
  bool Value() {
    const bool simple_key = VerifySimpleKey();
    can_be_json_flow_ = false;
    if (simple_key) {
      simple_key_allowed_ = false;
    } else {
      if (InBlock()) {
        if (!simple_key_allowed_) return false;
        PushIndentTo(column_, IndentKind::kMap);
      }
      simple_key_allowed_ = InBlock();
    }
    Eat(1);
    return true;
  }

  bool BlockScalar();
  bool QuotedScalar();
  bool PlainScalar();
  bool ScanScalar(ScalarParams& params);
  bool EndMatches(const ScalarParams& params) const;
  bool Escape(const ScalarParams& params);
  bool ReadHex(size_t at, int digits, uint32_t* value) const;

  const absl::string_view text_;
  const int max_nesting_;
  size_t pos_ = 0;
  int line_ = 0;
  int column_ = 0;
  std::vector<Indent> indents_;  // every indentation ever pushed; simple keys refer to them
  std::vector<int> stack_;       // the open ones, innermost last
  size_t valid_open_ = 0;        // the open ones whose status is valid
  std::vector<char> flows_;      // the open flow collections, '[' or '{'
  std::vector<SimpleKey> keys_;
  bool simple_key_allowed_ = true;
  bool can_be_json_flow_ = false;
  std::vector<std::pair<size_t, std::string>> edits_;  // surrogate pairs, in text order
  absl::Status status_;
};

bool ShapeScanner::BlockScalar() {
  ScalarParams params{.end = ScalarEnd::kText, .indent = 1, .detect_indent = true};
  Eat(1);
  const bool chomp0 = OneOf(At(0), "+-"), chomp1 = OneOf(At(1), "+-");
  const bool digit0 = std::isdigit(static_cast<unsigned char>(At(0))) != 0;
  const bool digit1 = std::isdigit(static_cast<unsigned char>(At(1))) != 0;
  const size_t n = (chomp0 && digit1) || (digit0 && chomp1) ? 2 : (chomp0 || digit0) ? 1 : 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = At(0);
    Eat(1);
    if (c == '0') return false;
    if (c >= '1' && c <= '9') {
      params.indent = c - '0';
      params.detect_indent = false;
    }
  }
  while (IsBlank(At(0))) Eat(1);
  if (At(0) == '#') {
    while (More() && BreakAt(0) == 0) Eat(1);
  }
  if (More() && BreakAt(0) == 0) return false;
  if (TopIndent() >= 0) params.indent += TopIndent();
  params.throw_on_tab_in_indentation = true;
  if (!ScanScalar(params)) return false;
  simple_key_allowed_ = true;
  can_be_json_flow_ = false;
  return true;
}

bool ShapeScanner::QuotedScalar() {
  const bool single = At(0) == '\'';
  ScalarParams params{.end = single ? ScalarEnd::kSingleQuote : ScalarEnd::kDoubleQuote,
                      .eat_end = true,
                      .eat_leading_whitespace = true,
                      .escape = single ? '\'' : '\\',
                      .on_doc_indicator = OnDocIndicator::kThrow};
  InsertSimpleKey();
  Eat(1);
  if (!ScanScalar(params)) return false;
  simple_key_allowed_ = false;
  can_be_json_flow_ = true;
  return true;
}

bool ShapeScanner::PlainScalar() {
  ScalarParams params{.end = InBlock() ? ScalarEnd::kPlainBlock : ScalarEnd::kPlainFlow,
                      .indent = InBlock() ? TopIndent() + 1 : 0,
                      .eat_leading_whitespace = true,
                      .on_doc_indicator = OnDocIndicator::kBreak,
                      .throw_on_tab_in_indentation = true};
  InsertSimpleKey();
  if (!ScanScalar(params)) return false;
  simple_key_allowed_ = params.leading_spaces;
  can_be_json_flow_ = false;
  return true;
}

bool ShapeScanner::EndMatches(const ScalarParams& params) const {
  switch (params.end) {
    case ScalarEnd::kText: return !More();
    case ScalarEnd::kPlainBlock: return (At(0) == ':' && EndOrBlankOrBreakAt(1)) || CommentAfterBlankAt(0);
    case ScalarEnd::kPlainFlow:
      return (At(0) == ':' && (EndOrBlankOrBreakAt(1) || OneOf(At(1), ",]}"))) || OneOf(At(0), ",?[]{}") ||
             CommentAfterBlankAt(0);
    case ScalarEnd::kSingleQuote: return At(0) == '\'' && At(1) != '\'';
    case ScalarEnd::kDoubleQuote: return At(0) == '"';
  }
  return false;
}

// yaml-cpp's ScanScalar, less the text it builds: where a scalar ends, and whether it throws.
bool ShapeScanner::ScanScalar(ScalarParams& params) {
  bool found_non_empty_line = false;
  while (More()) {
    // The line up to its break or the scalar's end.
    while (!EndMatches(params) && BreakAt(0) == 0) {
      if (!More()) break;
      if (DocIndicatorHere()) {
        if (params.on_doc_indicator == OnDocIndicator::kBreak) break;
        if (params.on_doc_indicator == OnDocIndicator::kThrow) return false;
      }
      found_non_empty_line = true;
      if (params.escape == '\\' && At(0) == '\\' && BreakAt(1) > 0) {
        Eat(1);
        break;
      }
      if (params.escape != 0 && At(0) == params.escape) {
        if (!Escape(params)) return false;
        continue;
      }
      Eat(1);
    }
    if (!More()) return !params.eat_end;
    if (params.on_doc_indicator == OnDocIndicator::kBreak && DocIndicatorHere()) break;
    if (EndMatches(params)) {
      if (params.eat_end) Eat(1);
      break;
    }
    // The line break, then the next line's indentation.
    Eat(BreakAt(0));
    while (At(0) == ' ' && (column_ < params.indent || (params.detect_indent && !found_non_empty_line)) &&
           !EndMatches(params)) {
      Eat(1);
    }
    if (params.detect_indent && !found_non_empty_line) params.indent = std::max(params.indent, column_);
    while (IsBlank(At(0))) {
      if (At(0) == '\t' && column_ < params.indent && params.throw_on_tab_in_indentation) return false;
      if (!params.eat_leading_whitespace || EndMatches(params)) break;
      Eat(1);
    }
    if (BreakAt(0) == 0 && column_ < params.indent) {
      params.leading_spaces = true;
      break;
    }
  }
  return true;
}

bool ShapeScanner::ReadHex(size_t at, int digits, uint32_t* value) const {
  *value = 0;
  for (int i = 0; i < digits; ++i) {
    const char c = At(at + i);
    if (!IsHex(c)) return false;
    *value = *value * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return true;
}

// One escape of a quoted scalar (yaml-cpp's Exp::Escape). JSON writes a character beyond U+FFFF
// as two \u escapes, a high then a low surrogate; yaml-cpp reads \u escapes one at a time and
// refuses each half, so the pair is rewritten as the \U escape of the character.
bool ShapeScanner::Escape(const ScalarParams& params) {
  if (params.escape == '\'') {
    Eat(2);
    return true;
  }
  const char kind = At(1);
  const int digits = kind == 'x' ? 2 : kind == 'u' ? 4 : kind == 'U' ? 8 : 0;
  if (digits == 0) {
    if (!OneOf(kind, "0abt\tnvfre \"'\\/N_LP")) return false;
    Eat(2);
    return true;
  }
  uint32_t value = 0;
  if (!ReadHex(2, digits, &value)) return false;
  const bool high = kind == 'u' && value >= 0xD800 && value <= 0xDBFF;
  const bool low = kind == 'u' && value >= 0xDC00 && value <= 0xDFFF;
  if (high) {
    uint32_t second = 0;
    if (At(6) == '\\' && At(7) == 'u' && ReadHex(8, 4, &second) && second >= 0xDC00 && second <= 0xDFFF) {
      const uint32_t code_point = 0x10000 + ((value - 0xD800) << 10) + (second - 0xDC00);
      edits_.emplace_back(pos_, absl::StrFormat("\\U%08X", code_point));
      Eat(kPairLength);
      return true;
    }
  }
  if (high || low) {
    return Refuse(absl::StrFormat(
        "\\u%04x is half of a UTF-16 surrogate pair: a high surrogate (\\ud800-\\udbff) must be followed at once by a "
        "low one (\\udc00-\\udfff), as in \\ud83d\\ude80",
        value));
  }
  if ((value >= 0xD800 && value <= 0xDFFF) || value > 0x10FFFF) return false;
  Eat(2 + digits);
  return true;
}

}  // namespace

absl::StatusOr<std::string> ScanYamlShape(absl::string_view text, int max_nesting) {
  return ShapeScanner(text, max_nesting).Run();
}

}  // namespace gradsync::spec::internal

#include "yaml_shape.h"

#include <yaml.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/exceptions.h"
#include "yaml-cpp/parser.h"

namespace gradsync::spec::internal {
namespace {

constexpr int kEscapeLength = 6;         // \uXXXX
constexpr int kPairLength = 12;          // \uXXXX\uXXXX
constexpr char kPlaceholder[] = "0041";  // the hex digits of a surrogate escape, for the event pass

bool IsHex(char c) { return absl::ascii_isxdigit(static_cast<unsigned char>(c)); }

// The value of `\uXXXX` at text[at], if that is one.
bool EscapeAt(absl::string_view text, size_t at, uint32_t* value) {
  if (at + kEscapeLength > text.size() || text[at] != '\\' || text[at + 1] != 'u') return false;
  uint32_t v = 0;
  for (int i = 2; i < kEscapeLength; ++i) {
    const char c = text[at + i];
    if (!IsHex(c)) return false;
    v = v * 16 + static_cast<uint32_t>(
                     absl::ascii_isdigit(static_cast<unsigned char>(c)) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10);
  }
  *value = v;
  return true;
}

bool IsSurrogate(uint32_t v) { return v >= 0xD800 && v <= 0xDFFF; }

// "line L, column C: <problem>" for the byte at `offset` (1-based, columns in bytes).
absl::Status AtByte(absl::string_view text, size_t offset, absl::string_view problem) {
  size_t line = 0, line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') ++line, line_start = i + 1;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("line ", line + 1, ", column ", offset - line_start + 1, ": ", problem));
}

// libyaml's marks count characters; the messages and the rewrite need bytes. Marks only move
// forward through a parse, so one walk serves them all. A UTF-8 byte order mark is no character.
class ByteOffsets {
 public:
  explicit ByteOffsets(absl::string_view text) : text_(text) {
    if (absl::StartsWith(text, "\xEF\xBB\xBF")) byte_ = 3;
  }
  size_t Of(size_t char_index) {
    while (char_ < char_index && byte_ < text_.size()) {
      const auto lead = static_cast<unsigned char>(text_[byte_]);
      byte_ += lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
      ++char_;
    }
    return std::min(byte_, text_.size());
  }

 private:
  absl::string_view text_;
  size_t byte_ = 0, char_ = 0;
};

struct Parser {
  yaml_parser_t parser;
  Parser() { yaml_parser_initialize(&parser); }
  ~Parser() { yaml_parser_delete(&parser); }
};

struct Event {
  yaml_event_t event{};
  ~Event() { yaml_event_delete(&event); }
};

// What one pass of libyaml's events finds: the first problem, and the byte ranges of the
// double-quoted scalars (where JSON's surrogate-pair escapes are escapes).
class EventScan {
 public:
  EventScan(absl::string_view original, int max_nesting) : original_(original), offsets_(original), max_(max_nesting) {}

  absl::Status Run(const std::string& scanned) {
    Parser p;
    yaml_parser_set_input_string(&p.parser, reinterpret_cast<const unsigned char*>(scanned.data()), scanned.size());
    while (true) {
      Event e;
      if (!yaml_parser_parse(&p.parser, &e.event)) return ParseError(p.parser);
      if (absl::Status s = OnEvent(e.event); !s.ok()) return s;
      if (e.event.type == YAML_STREAM_END_EVENT) return absl::OkStatus();
    }
  }

  const std::vector<std::pair<size_t, size_t>>& double_quoted() const { return double_quoted_; }

 private:
  absl::Status At(const yaml_mark_t& mark, absl::string_view problem) {
    return AtByte(original_, offsets_.Of(mark.index), problem);
  }

  absl::Status OnEvent(const yaml_event_t& e) {
    switch (e.type) {
      case YAML_DOCUMENT_START_EVENT:
        if (e.data.document_start.version_directive != nullptr ||
            e.data.document_start.tag_directives.start != e.data.document_start.tag_directives.end) {
          return At(e.start_mark, "directives (%) are not supported in a job spec");
        }
        return absl::OkStatus();
      case YAML_ALIAS_EVENT: return At(e.start_mark, kAnchors);
      case YAML_SCALAR_EVENT:
        if (absl::Status s = Properties(e, e.data.scalar.anchor, e.data.scalar.tag); !s.ok()) return s;
        if (e.data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE) {
          const size_t begin = offsets_.Of(e.start_mark.index);  // before the end: the walk only goes forward
          double_quoted_.emplace_back(begin, offsets_.Of(e.end_mark.index));
        }
        return absl::OkStatus();
      case YAML_SEQUENCE_START_EVENT:
        return Open(e, e.data.sequence_start.anchor, e.data.sequence_start.tag,
                    e.data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE);
      case YAML_MAPPING_START_EVENT:
        return Open(e, e.data.mapping_start.anchor, e.data.mapping_start.tag,
                    e.data.mapping_start.style == YAML_FLOW_MAPPING_STYLE);
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: return Close();
      default: return absl::OkStatus();
    }
  }

  absl::Status Properties(const yaml_event_t& e, const yaml_char_t* anchor, const yaml_char_t* tag) {
    if (anchor != nullptr) return At(e.start_mark, kAnchors);
    if (tag != nullptr) return At(e.start_mark, "tags (!) are not supported in a job spec");
    return absl::OkStatus();
  }

  absl::Status Open(const yaml_event_t& e, const yaml_char_t* anchor, const yaml_char_t* tag, bool flow) {
    if (absl::Status s = Properties(e, anchor, tag); !s.ok()) return s;
    open_.push_back(flow);
    flow_ += flow;
    if (static_cast<int>(open_.size()) > max_) {
      return At(e.start_mark, absl::StrCat("maps and lists nest deeper than the limit of ", max_, " levels"));
    }
    return absl::OkStatus();
  }

  absl::Status Close() {
    if (!open_.empty()) {
      flow_ -= open_.back();
      open_.pop_back();
    }
    return absl::OkStatus();
  }

  // libyaml's refusal, where it stands. A ',' outside any flow collection gets words of its own.
  absl::Status ParseError(const yaml_parser_t& p) {
    const size_t at = offsets_.Of(p.problem_mark.index);
    if (flow_ == 0 && at < original_.size() && original_[at] == ',') {
      return AtByte(original_, at, "',' outside a flow list or map ([...] or {...})");
    }
    std::string problem = p.problem != nullptr ? p.problem : "not YAML";
    if (p.context != nullptr) problem = absl::StrCat(p.context, ": ", problem);
    return AtByte(original_, at, problem);
  }

  static constexpr char kAnchors[] = "anchors (&) and aliases (*) are not supported in a job spec";

  absl::string_view original_;
  ByteOffsets offsets_;
  const int max_;
  std::vector<std::pair<size_t, size_t>> double_quoted_;  // byte ranges
  std::vector<bool> open_;  // the collections open now, outermost first: whether each is a flow one
  int flow_ = 0;            // how many of them are
};

// The text with every \u escape of a surrogate given the digits of 'A': the same length and the same
// structure, which libyaml reads (it refuses surrogate escapes, JSON's only way to write characters
// past U+FFFF).
std::string WithoutSurrogateEscapes(absl::string_view text) {
  std::string out(text);
  for (size_t i = 0; i + kEscapeLength <= out.size(); ++i) {
    uint32_t v = 0;
    if (EscapeAt(out, i, &v) && IsSurrogate(v)) out.replace(i + 2, 4, kPlaceholder);
  }
  return out;
}

// JSON's surrogate pairs in the double-quoted scalars [begin, end) of `text`, as the one escape
// yaml-cpp reads ("\ud83d\ude80" as "\U0001F680"); a lone surrogate is refused where it stands.
absl::StatusOr<std::string> RewritePairs(absl::string_view text,
                                         const std::vector<std::pair<size_t, size_t>>& scalars) {
  std::string out;
  size_t copied = 0;
  for (const auto& [begin, end] : scalars) {
    for (size_t i = begin; i < end; ++i) {
      if (text[i] != '\\') continue;
      uint32_t high = 0, low = 0;
      if (!EscapeAt(text, i, &high) || !IsSurrogate(high)) {
        ++i;  // an escaped character, e.g. the second backslash of "\\ud83d"
        continue;
      }
      if (high <= 0xDBFF && i + kPairLength <= end && EscapeAt(text, i + kEscapeLength, &low) && low >= 0xDC00 &&
          low <= 0xDFFF) {
        const uint32_t code_point = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
        absl::StrAppend(&out, text.substr(copied, i - copied), absl::StrFormat("\\U%08X", code_point));
        copied = i + kPairLength;
        i += kPairLength - 1;
        continue;
      }
      return AtByte(text, i,
                    absl::StrFormat("\\u%04x is half of a UTF-16 surrogate pair: a high surrogate (\\ud800-\\udbff) "
                                    "must be followed at once by a low one (\\udc00-\\udfff), as in \\ud83d\\ude80",
                                    high));
    }
  }
  absl::StrAppend(&out, text.substr(copied));
  return out;
}

// yaml-cpp's own parser, stopped by its own events before it recurses past `max_depth`
// collections: where libyaml and yaml-cpp read text differently (libyaml reads YAML 1.1, and takes
// a lone CR for a line break, for one), yaml-cpp's reading is bounded too. Its parse stops at the
// event that opens one level too many, unwinding its recursion there.
class DepthGuard final : public YAML::EventHandler {
 public:
  struct TooDeep {
    YAML::Mark mark;
  };
  explicit DepthGuard(int max_depth) : max_(max_depth) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Open(mark);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Open(mark);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void Open(const YAML::Mark& mark) {
    if (++depth_ > max_) throw TooDeep{mark};
  }
  const int max_;
  int depth_ = 0;
};

// Each level libyaml counts is at most two in yaml-cpp (a flow list's `key: value` entry is a map).
absl::Status CheckYamlCppDepth(const std::string& text, int max_nesting) {
  std::istringstream in(text);
  DepthGuard guard(2 * max_nesting);
  try {
    YAML::Parser parser(in);
    // Two documents at most, as ParseJobSpec reads them.
    for (int read = 0; read < 2 && parser.HandleNextDocument(guard); ++read) {
    }
  } catch (const DepthGuard::TooDeep& deep) {
    return AtByte(text, static_cast<size_t>(std::max(deep.mark.pos, 0)),
                  absl::StrCat("maps and lists nest deeper than the limit of ", max_nesting, " levels"));
  } catch (const YAML::Exception&) {
    // yaml-cpp's own refusal, reported by the parse that follows.
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ScanYamlShape(absl::string_view text, int max_nesting) {
  EventScan scan(text, max_nesting);
  if (absl::Status s = scan.Run(WithoutSurrogateEscapes(text)); !s.ok()) return s;
  absl::StatusOr<std::string> rewritten = RewritePairs(text, scan.double_quoted());
  if (!rewritten.ok()) return rewritten.status();
  if (absl::Status s = CheckYamlCppDepth(*rewritten, max_nesting); !s.ok()) return s;
  return rewritten;
}

}  // namespace gradsync::spec::internal

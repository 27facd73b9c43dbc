#include "spec_text.h"
#include "gradsync/core/utf8.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "utf8.h"
#include "yaml_shape.h"

namespace gradsync::spec::internal {
namespace {

// "line L, column C: <problem>" for the byte at `offset` (both 1-based, columns in bytes).
absl::Status AtByte(absl::string_view text, size_t offset, absl::string_view problem) {
  const absl::string_view before = text.substr(0, offset);
  const size_t line_start = before.rfind('\n');
  const size_t column = line_start == absl::string_view::npos ? offset : offset - line_start - 1;
  const size_t line = static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
  return absl::InvalidArgumentError(absl::StrCat("line ", line + 1, ", column ", column + 1, ": ", problem));
}

// The C0 controls but tab, LF and CR, and DEL: YAML allows none of them in a document, and
// yaml-cpp takes 0x04 for the end of its input.
bool IsControl(unsigned char byte) {
  return (byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r') || byte == 0x7F;
}

}  // namespace

absl::StatusOr<std::string> CheckSpecText(absl::string_view text) {
  if (text.size() > kMaxSpecBytes) {
    return absl::InvalidArgumentError(absl::StrCat("more than the limit of ", kMaxSpecBytes, " bytes for a job spec"));
  }
  if (const size_t valid = utf8::ValidPrefix(std::string_view(text.data(), text.size())); valid != text.size()) {
    return AtByte(text, valid, "not UTF-8 text (a job spec is YAML or JSON in UTF-8)");
  }
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (IsControl(byte)) return AtByte(text, i, absl::StrFormat("control character 0x%02x", byte));
  }
  return ScanYamlShape(text);
}

}  // namespace gradsync::spec::internal

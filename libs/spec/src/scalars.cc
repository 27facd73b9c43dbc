#include "scalars.h"

#include <cctype>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gradsync::spec::internal {
namespace {

// Optional sign, then one or more decimal digits and nothing else.
bool IsDecimalInteger(absl::string_view text) {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) text.remove_prefix(1);
  if (text.empty()) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool IsNumberText(absl::string_view text) {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) text.remove_prefix(1);
  bool digits = false;
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits = true;
    } else if (c != '.' && c != 'e' && c != 'E' && c != '-' && c != '+') {
      return false;
    }
  }
  return digits;
}

}  // namespace

absl::StatusOr<int64_t> ParseInteger(absl::string_view text, int64_t min, int64_t max) {
  if (!IsDecimalInteger(text)) return absl::InvalidArgumentError("expected an integer");
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < min || value > max) {
    return absl::InvalidArgumentError(absl::StrCat("expected an integer between ", min, " and ", max));
  }
  return value;
}

absl::StatusOr<uint64_t> ParseUnsigned(absl::string_view text, uint64_t max) {
  if (!IsDecimalInteger(text)) return absl::InvalidArgumentError("expected an integer");
  if (text[0] == '-') {
    uint64_t magnitude = 0;
    // "-0" is zero, not negative.
    if (absl::SimpleAtoi(text.substr(1), &magnitude) && magnitude == 0) return 0;
    return absl::InvalidArgumentError("expected a non-negative integer");
  }
  uint64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value > max) {
    return absl::InvalidArgumentError(absl::StrCat("expected an integer between 0 and ", max));
  }
  return value;
}

absl::StatusOr<double> ParseNumber(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower == ".inf" || lower == "+.inf" || lower == "infinity") {
    return std::numeric_limits<double>::infinity();
  }
  if (lower == "-.inf" || lower == "-infinity") return -std::numeric_limits<double>::infinity();
  if (lower == ".nan" || lower == "nan") return std::numeric_limits<double>::quiet_NaN();
  double value = 0;
  // SimpleAtod alone would also take hexadecimal floats and surrounding spaces.
  if (!IsNumberText(text) || !absl::SimpleAtod(text, &value)) {
    return absl::InvalidArgumentError("expected a number");
  }
  return value;
}

absl::StatusOr<bool> ParseBoolean(absl::string_view text) {
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  return absl::InvalidArgumentError("expected true or false");
}

}  // namespace gradsync::spec::internal

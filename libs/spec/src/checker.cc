#include "checker.h"

#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gradsync::spec::internal {

void Checker::Require(bool ok, absl::string_view path, absl::string_view problem, absl::string_view got) {
  if (ok || !status_.ok()) return;
  status_ = absl::InvalidArgumentError(absl::StrCat(path, ": ", problem, ", got ", got));
}

void Checker::Merge(const absl::Status& status) {
  if (status_.ok()) status_ = status;
}

void Checker::Between(absl::string_view path, int64_t value, int64_t min, int64_t max) {
  Require(value >= min && value <= max, path, absl::StrCat("must be between ", min, " and ", max), absl::StrCat(value));
}

void Checker::AtLeast(absl::string_view path, int64_t value, int64_t min) {
  Require(value >= min, path, absl::StrCat("must be at least ", min), absl::StrCat(value));
}

void Checker::Number(absl::string_view path, double value, Bound lower, const Bound* upper) {
  std::string problem =
      absl::StrCat("must be a finite number ", lower.inclusive ? "at least " : "greater than ", lower.value);
  bool ok = std::isfinite(value) && (lower.inclusive ? value >= lower.value : value > lower.value);
  if (upper != nullptr) {
    absl::StrAppend(&problem, " and ", upper->inclusive ? "at most " : "less than ", upper->value);
    ok = ok && (upper->inclusive ? value <= upper->value : value < upper->value);
  }
  Require(ok, path, problem, absl::StrCat(value));
}

void Checker::OneOf(absl::string_view path, absl::string_view value, absl::Span<const absl::string_view> allowed) {
  bool ok = false;
  for (absl::string_view candidate : allowed) ok = ok || value == candidate;
  Require(ok, path, absl::StrCat("must be one of ", absl::StrJoin(allowed, ", ")), Quote(value));
}

std::string Quote(absl::string_view value) { return absl::StrCat("\"", absl::CHexEscape(value), "\""); }

}  // namespace gradsync::spec::internal

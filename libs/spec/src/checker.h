// Range and membership checks that keep the first failure, so validation reads as a flat list
// of rules in the order problems should be reported.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace gradsync::spec::internal {

// One end of an allowed interval of numbers.
struct Bound {
  double value;
  bool inclusive;
};

// Each check does nothing once a check has failed; status() is then INVALID_ARGUMENT
// "<path>: <problem>, got <value>" for the first failure.
class Checker {
 public:
  // min <= value <= max.
  void Between(absl::string_view path, int64_t value, int64_t min, int64_t max);
  void AtLeast(absl::string_view path, int64_t value, int64_t min);
  // A finite value within the bounds; no upper bound when `upper` is null.
  void Number(absl::string_view path, double value, Bound lower, const Bound* upper = nullptr);
  void OneOf(absl::string_view path, absl::string_view value, absl::Span<const absl::string_view> allowed);
  // Records `problem` for `path` if `ok` is false; `got` is the offending value as text.
  void Require(bool ok, absl::string_view path, absl::string_view problem, absl::string_view got);

  // Records `status` if it is the first failure (a rule checked elsewhere, already phrased as
  // "<path>: <problem>, got <value>").
  void Merge(const absl::Status& status);

  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

// A string value as it appears in messages: quoted, with control characters escaped.
std::string Quote(absl::string_view value);

}  // namespace gradsync::spec::internal

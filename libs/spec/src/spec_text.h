// Bounds on the text of a spec, checked before any parser sees it: its size, its bytes and (through
// ScanYamlShape) how deep it nests.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync::spec::internal {

// The most bytes a spec's text may hold: the REST API's default body limit, and hundreds of times
// what a job spec needs.
inline constexpr size_t kMaxSpecBytes = size_t{1} << 20;

// Returns the text for yaml-cpp (ScanYamlShape's, with JSON surrogate pairs rewritten), or
// INVALID_ARGUMENT naming the limit or the place ("line L, column C: ..."): more than
// kMaxSpecBytes, bytes that are not UTF-8 (yaml-cpp would guess UTF-16 or UTF-32 from them),
// control characters other than tab and line breaks, and what ScanYamlShape refuses.
absl::StatusOr<std::string> CheckSpecText(absl::string_view text);

}  // namespace gradsync::spec::internal

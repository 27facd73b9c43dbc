// The shape of YAML (or JSON) text, found before yaml-cpp parses it.
//
// yaml-cpp 0.7's parser recurses once per nested collection, up to a guard of its own (500 levels)
// that only an 8 MiB stack survives. This scan walks the text with yaml-cpp's tokenizing rules
// (its scanner's token boundaries, indentation stack and simple keys) but builds nothing and never
// recurses, so the nesting is known, and bounded, before any parser runs: text that passes is
// parsed within a few hundred KiB of stack on any thread.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync::spec::internal {

// How deep maps and lists may nest: every block map or list opened by indentation, and every
// flow `[` or `{`, counts one level (a job spec needs four).
inline constexpr int kMaxNesting = 64;

// Returns the text yaml-cpp should parse: `text` with JSON's surrogate-pair escapes in
// double-quoted scalars ("\ud83d\ude80", which yaml-cpp refuses half by half) rewritten as the one
// escape it reads ("\U0001F680"); nothing else changes, lines included.
// INVALID_ARGUMENT "line L, column C: <problem>" (1-based, in bytes, as yaml-cpp counts) for
// collections nested deeper than `max_nesting`, a lone surrogate escape, and anchors, aliases,
// tags or directives: a job spec has no use for them, and an alias expands a few bytes into as
// many copies of a value as it names.
// Text that yaml-cpp itself refuses is left for yaml-cpp to report: the scan stops where yaml-cpp's
// scanner throws, and the text before that point is checked.
absl::StatusOr<std::string> ScanYamlShape(absl::string_view text, int max_nesting = kMaxNesting);

}  // namespace gradsync::spec::internal

// The shape of YAML (or JSON) text, found before yaml-cpp parses it.
//
// yaml-cpp's parser recurses once per nested collection, up to a guard of its own (500 levels in
// 0.7) that only an 8 MiB stack survives. libyaml's parser never recurses: its event stream gives
// the nesting, anchors, aliases, tags and directives of the text, bounded before any recursive
// parser runs; and where the two libraries read text differently, yaml-cpp's own parser, driven by
// events that stop it one level past twice the limit, bounds its reading too. Text that passes is
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
// Text that libyaml refuses is refused with libyaml's problem at its place (and a ',' outside any
// flow collection, on which yaml-cpp 0.7 allocates without end, with words of its own): no text
// reaches yaml-cpp unread.
absl::StatusOr<std::string> ScanYamlShape(absl::string_view text, int max_nesting = kMaxNesting);

}  // namespace gradsync::spec::internal

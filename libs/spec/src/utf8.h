// UTF-8 (gradsync/core/utf8.h) and length checks for the strings of a spec: a name or path that is not valid UTF-8
// cannot be printed in JSON, nor sent back over gRPC, so it is refused where the spec enters; so is one longer than any
// name or path needs to be.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace gradsync::spec::internal {

// The most bytes one string of a spec may hold: PATH_MAX, the longest path a worker can open.
inline constexpr size_t kMaxStringBytes = 4096;

struct BadString {
  std::string path;     // the JSON path, e.g. "data.text.paths[1]"
  std::string problem;  // "must be valid UTF-8"
  std::string got;      // what it holds, described without quoting it
};

// The first string field of `message` (nested messages and repeated fields included) that is not
// valid UTF-8 or is longer than kMaxStringBytes; nullopt when none is.
std::optional<BadString> FirstBadString(const google::protobuf::Message& message);

}  // namespace gradsync::spec::internal

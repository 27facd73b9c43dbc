// UTF-8 checks for the strings of a spec: a name or path that is not valid UTF-8 cannot be
// printed in JSON, nor sent back over gRPC, so it is refused where the spec enters.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace gradsync::spec::internal {

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF).
bool IsValidUtf8(absl::string_view text);

// The JSON path of the first string field of `message` (nested messages and repeated fields
// included, e.g. "data.text.paths[1]") that is not valid UTF-8; "" when all are.
std::string FirstInvalidUtf8Field(const google::protobuf::Message& message);

}  // namespace gradsync::spec::internal

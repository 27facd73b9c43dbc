// A guard before every JSON parser that takes outside input (tokenizer.json, a safetensors header,
// a checkpoint manifest, a server's answer): protobuf's JSON parser takes time quadratic in how
// deeply a text nests (a tokenizer.json 100,000 levels deep took over a minute), and recursive
// ones grow the stack with it. One linear pass, no recursion, counts the nesting of objects and
// arrays outside strings and refuses it past the limit before any parser sees the text.
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace gradsync {

// Deeper than any JSON gradsync reads or writes (a job spec's own limit is 64).
inline constexpr int kMaxJsonDepth = 64;

// OK when `text` nests objects and arrays at most `max_depth` deep. INVALID_ARGUMENT naming
// `source` (the file or server) and the byte offset where the limit is passed otherwise. Says
// nothing else about whether the text is JSON: the parser still judges that.
absl::Status CheckJsonDepth(std::string_view text, std::string_view source, int max_depth = kMaxJsonDepth);

}  // namespace gradsync

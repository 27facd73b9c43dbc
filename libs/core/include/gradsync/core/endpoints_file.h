// The small JSON files through which services announce the addresses they bound (port 0 picks
// a free port, so callers such as the local cluster read them back).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "gradsync/core/json_string.h"  // JsonString, with which the files are written

namespace gradsync {

// Writes {"name": "value", ...} to `path` atomically (a temporary file, then rename), so a reader
// sees the old file or the whole new one. Values are written as JSON strings, escaped.
// INTERNAL naming the path when it cannot be written.
absl::Status WriteEndpointsFile(const std::string& path, const std::map<std::string, std::string>& fields);

// Replaces `path` with `contents` the same way: `path`.tmp created afresh (0600, never through a
// link), written, fsynced and closed with every error checked, renamed over `path`, and the
// directory fsynced. On any error (a full disk shows at write, fsync or close) the temporary file
// is removed and `path` keeps its old contents: a reader never finds it empty. INTERNAL naming the
// file and the error.
absl::Status ReplaceFileAtomically(const std::string& path, std::string_view contents);

// "127.0.0.1:<port>", the loopback address of a locally bound port.
std::string LoopbackAddress(int port);

}  // namespace gradsync

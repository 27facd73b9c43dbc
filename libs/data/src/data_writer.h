// The one way libs/data writes a file (a shard, a loss mask): whole or not at all, readable by the
// workers that train on it (0644).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace gradsync::data::internal {

// Writes the `pieces`, in order, to `path`.tmp.<pid>, fsyncs it and renames it over `path`; on any
// error the temporary file is removed. INTERNAL naming the file and the error.
absl::Status WriteDataFile(const std::string& path, std::initializer_list<std::string_view> pieces);

}  // namespace gradsync::data::internal

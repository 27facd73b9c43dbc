// The one way libs/data opens a file a job spec names. A spec's path may name anything the
// worker can open: a directory, /dev/zero, a fifo, a file of terabytes. Each must fail the job
// with a clear error, never hang the worker, throw from a stream or read without bound.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync::data {

// The whole of the regular file at `path`, at most `max_bytes` long. The type and size are
// checked on the open file before a byte is read. INVALID_ARGUMENT for a directory, anything
// else that is not a regular file (a device, a fifo, a socket) or a file over `max_bytes`;
// NOT_FOUND when it cannot be opened; INTERNAL on a read error. Every message names the path and
// the problem only: never the file's contents or its size.
absl::StatusOr<std::string> ReadDataFile(const std::string& path, int64_t max_bytes);

}  // namespace gradsync::data

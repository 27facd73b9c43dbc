// The one way a service reads a whole file that a user names (a data file, a tokenizer): the
// path may name anything the process can open (a directory, /dev/zero, a fifo, a file of
// terabytes), and each must end in a clear error, never a hang, a stream exception or a read
// without bound.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// The whole of the regular file at `path`, at most `max_bytes` long, the type and size checked on
// the open file before a byte is read. `what` names the kind of file in errors ("a data file").
// INVALID_ARGUMENT for a directory, anything else that is not a regular file (a device, a fifo, a
// socket) or a file over `max_bytes`, also one that grows beyond it while read; NOT_FOUND when it
// cannot be opened; INTERNAL on a read error. Every message names the path and the problem only:
// never the file's contents or its size.
//
// With `seen`, also gives the owner and mode of the file that was read (from the open file, so they
// are the very file's, not those of whatever the path names a moment later).
struct FileOwnership {
  uid_t owner = 0;
  mode_t mode = 0;
};
absl::StatusOr<std::string> ReadBoundedFile(const std::string& path, int64_t max_bytes, absl::string_view what,
                                            FileOwnership* seen = nullptr);

// Whether the last component of a path may be a symbolic link.
enum class Links { kFollow, kRefuse };

// A descriptor for reading the regular file at `path` (the caller closes it), opened so that no
// file type can stall or trick the reader: O_NONBLOCK while opening (a fifo without a writer does
// not hang the open; O_NONBLOCK is cleared once the file is known to be regular), O_NOCTTY, and
// with kRefuse O_NOFOLLOW. NOT_FOUND when it cannot be opened; FAILED_PRECONDITION naming the path
// for a symbolic link under kRefuse, a directory, a fifo, a device or a socket.
absl::StatusOr<int> OpenRegularFile(const std::string& path, Links links = Links::kFollow);

}  // namespace gradsync

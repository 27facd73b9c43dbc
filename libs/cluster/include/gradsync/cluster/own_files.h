// A local cluster's state directory holds its tokens and the file that says where its services
// listen: a client that trusts a file someone else can write would send its token wherever that
// file points. So the directory and the files read from it are trusted only when they are this
// user's alone: owned by the effective user, not writable by group or others, and not symbolic
// links. A directory the cluster creates is created 0700.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace gradsync::cluster {

// OK when `dir` is a directory (not a link to one) that this user owns and no one else may write.
// FAILED_PRECONDITION naming the directory, its owner or mode, and what to do.
absl::Status CheckOwnDirectory(const std::string& dir);

// The same for a regular file.
absl::Status CheckOwnFile(const std::string& path);

// Creates `dir` (and missing parents) with mode 0700 when it does not exist, then CheckOwnDirectory.
absl::Status MakeOwnDirectory(const std::string& dir);

}  // namespace gradsync::cluster

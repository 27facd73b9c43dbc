// Reading the small files that carry secrets and certificates (tokens, PEM keys), with errors that
// name the file and what it was for, and never its contents.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync {

// The whole file. NOT_FOUND if it cannot be read, INVALID_ARGUMENT if it is empty, not a regular
// file (a device such as /dev/zero, a fifo) or larger than 1 MiB; `what` says what the file is for
// ("the cluster token", "the TLS key").
absl::StatusOr<std::string> ReadSecretFile(const std::string& path, const std::string& what);

// The shortest token a token file may hold: 16 characters (a generated token has 64).
inline constexpr size_t kMinTokenLength = 16;

// A token: the file's text with surrounding whitespace (a trailing newline) removed. Besides
// ReadSecretFile's errors: INVALID_ARGUMENT for a token shorter than kMinTokenLength or one that is
// not a single word of visible ASCII; PERMISSION_DENIED for a file that users other than its owner
// may write (group or others), and for one of this user's own that every user may read while its
// directory lets them in (0644 in /tmp; 0644 inside a 0700 directory is private). A world-readable
// file owned by another user is accepted: that is how a secret mounted into a container reaches the
// service's user.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path, const std::string& what);

}  // namespace gradsync

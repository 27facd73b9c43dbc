// Reading the small files that carry secrets and certificates (tokens, PEM keys), with errors that
// name the file and what it was for, and never its contents.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace gradsync {

// The whole file. NOT_FOUND if it cannot be read, INVALID_ARGUMENT if it is empty, not a regular
// file (a device such as /dev/zero, a fifo) or larger than 1 MiB; `what` says what the file is for
// ("the cluster token", "the TLS key").
absl::StatusOr<std::string> ReadSecretFile(const std::string& path, const std::string& what);

// A token: the file's text with surrounding whitespace (a trailing newline) removed.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path, const std::string& what);

}  // namespace gradsync

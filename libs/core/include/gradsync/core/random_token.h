// Unguessable tokens for credentials: bearer tokens a local cluster generates, and the session a
// coordinator issues to each worker it registers.
#pragma once

#include <cstddef>
#include <string>

namespace gradsync {

// `bytes` bytes from the kernel's random source (getrandom(2)), as lowercase hex. Aborts the
// process if the kernel has no randomness to give, since a predictable credential is worse than
// none.
std::string NewRandomToken(size_t bytes = 32);

}  // namespace gradsync

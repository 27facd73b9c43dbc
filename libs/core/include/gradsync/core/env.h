// Configuration helpers: flags fall back to environment variables.
#pragma once

#include <string>

namespace gradsync {

// The value of environment variable `name`, or `fallback` when it is unset or empty.
std::string EnvOr(const char* name, const std::string& fallback);

// This host's name, or "localhost" if it cannot be read.
std::string HostName();

}  // namespace gradsync

// Bearer-token checks for the job APIs (REST and gRPC alike). Tokens are compared in constant
// time and never logged.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace gradsync::coordinator {

class TokenAuth {
 public:
  // No token: every request is allowed.
  TokenAuth() = default;
  explicit TokenAuth(std::string token) : token_(std::move(token)) {}

  // Reads the token from a file (surrounding whitespace trimmed). INVALID_ARGUMENT naming the file
  // if it is empty, NOT_FOUND if it cannot be read; `what` names the token in those messages.
  static absl::StatusOr<TokenAuth> FromFile(const std::string& path, const std::string& what = "the token");

  bool enabled() const { return !token_.empty(); }

  // Checks an "Authorization" header value. UNAUTHENTICATED saying what is wrong, never the token.
  absl::Status Check(const std::string& authorization) const;

 private:
  std::string token_;
};

// Equal in time that depends only on the lengths, not on where the strings differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace gradsync::coordinator

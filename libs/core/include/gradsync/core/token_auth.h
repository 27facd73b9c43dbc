// Bearer tokens: the one check every gradsync server makes, whatever it guards (the job APIs,
// worker calls, step-report ingestion, /metrics and the metrics JSON API). Tokens are compared in
// constant time and never logged or quoted in an error.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync {

class TokenAuth {
 public:
  // No token: every request is allowed.
  TokenAuth() = default;
  explicit TokenAuth(std::string token) : token_(std::move(token)) {}

  // Reads the token from a file (surrounding whitespace trimmed). INVALID_ARGUMENT naming the file
  // if it is empty, NOT_FOUND if it cannot be read; `what` names the token in those messages.
  static absl::StatusOr<TokenAuth> FromFile(const std::string& path, const std::string& what = "the token");
  // As FromFile, but an empty `path` gives no token (the flag was not set).
  static absl::StatusOr<TokenAuth> FromOptionalFile(const std::string& path, const std::string& what);

  bool enabled() const { return !token_.empty(); }

  // Checks an "Authorization" header value. UNAUTHENTICATED saying what is wrong, never the token.
  absl::Status Check(const std::string& authorization) const;

 private:
  std::string token_;
};

// Equal in time that depends only on the lengths, not on where the strings differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace gradsync

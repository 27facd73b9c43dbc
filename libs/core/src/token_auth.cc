#include "gradsync/core/token_auth.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "gradsync/core/secret_file.h"

namespace gradsync {

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

absl::StatusOr<TokenAuth> TokenAuth::FromFile(const std::string& path, const std::string& what) {
  auto token = ReadTokenFile(path, what);
  if (!token.ok()) return token.status();
  return TokenAuth(*std::move(token));
}

absl::StatusOr<TokenAuth> TokenAuth::FromOptionalFile(const std::string& path, const std::string& what) {
  if (path.empty()) return TokenAuth();
  return FromFile(path, what);
}

absl::Status TokenAuth::Check(const std::string& authorization) const {
  if (!enabled()) return absl::OkStatus();
  if (authorization.empty()) return absl::UnauthenticatedError("missing bearer token (Authorization: Bearer ...)");
  if (!absl::StartsWithIgnoreCase(authorization, "bearer ")) {
    return absl::UnauthenticatedError("the Authorization header must be \"Bearer <token>\"");
  }
  std::string presented = authorization.substr(7);
  absl::StripAsciiWhitespace(&presented);
  if (!ConstantTimeEquals(presented, token_)) return absl::UnauthenticatedError("invalid bearer token");
  return absl::OkStatus();
}

}  // namespace gradsync

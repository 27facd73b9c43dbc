// SHA-256 of bytes that arrive in pieces: a file sent or received in chunks, whose digest the
// receiver compares with the sender's (and a user with sha256sum's). OpenSSL's libcrypto computes
// it; this is the one place that calls it for a digest of data.
#pragma once

#include <memory>
#include <string>

#include "absl/strings/string_view.h"

namespace gradsync {

// Not thread-safe; one object per stream of bytes.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  // Adds the next bytes.
  void Update(absl::string_view bytes);
  // The 64 lowercase hex digits of the digest of every byte added so far. The object then starts
  // over, empty.
  std::string HexDigest();

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
};

// The 64 lowercase hex digits of the SHA-256 of `bytes`.
std::string Sha256Hex(absl::string_view bytes);

}  // namespace gradsync

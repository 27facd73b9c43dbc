#include "gradsync/core/sha256.h"

#include <openssl/evp.h>

#include "absl/strings/escaping.h"

namespace gradsync {

struct Sha256::Context {
  Context() : md(EVP_MD_CTX_new()) { Reset(); }
  ~Context() { EVP_MD_CTX_free(md); }
  void Reset() { EVP_DigestInit_ex(md, EVP_sha256(), nullptr); }
  EVP_MD_CTX* md;
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) {}

Sha256::~Sha256() = default;

void Sha256::Update(absl::string_view bytes) {
  if (!bytes.empty()) EVP_DigestUpdate(ctx_->md, bytes.data(), bytes.size());
}

std::string Sha256::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(ctx_->md, digest, &size);
  ctx_->Reset();
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), size));
}

std::string Sha256Hex(absl::string_view bytes) {
  Sha256 hash;
  hash.Update(bytes);
  return hash.HexDigest();
}

}  // namespace gradsync

// The HTTPS half of Server: a TLS server context built with the OpenSSL the process links, so a
// bad certificate or key is named before anything listens.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync::http {

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using TlsContext = std::unique_ptr<SSL_CTX, SslCtxFree>;

// INVALID_ARGUMENT naming the file when the certificate chain or the key cannot be loaded or do
// not fit each other. TLS 1.2 is the oldest version offered; no compression, no renegotiation.
absl::StatusOr<TlsContext> MakeTlsContext(absl::string_view name, const std::string& cert_file,
                                          const std::string& key_file);

}  // namespace gradsync::http

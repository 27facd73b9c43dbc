#include "tls_context.h"

#include <openssl/err.h>

#include "absl/strings/str_cat.h"

namespace gradsync::http {
namespace {

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return e == 0 ? "unknown OpenSSL error" : buf;
}

}  // namespace

absl::StatusOr<TlsContext> MakeTlsContext(absl::string_view name, const std::string& cert_file,
                                          const std::string& key_file) {
  TlsContext ctx(SSL_CTX_new(TLS_server_method()));
  if (ctx == nullptr) return absl::InternalError(absl::StrCat(name, " TLS: OpenSSL cannot make a context"));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  // Connection::Write retries a write cut short by a full socket from where it stopped.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert_file.c_str()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(name, " TLS: the certificate ", cert_file, ": ", OpenSslError()));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(name, " TLS: the key ", key_file, " does not fit the certificate ",
                                                   cert_file, ": ", OpenSslError()));
  }
  return ctx;
}

}  // namespace gradsync::http

#include "tls_context.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "absl/strings/str_cat.h"

namespace gradsync::http {
namespace {

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return e == 0 ? "unknown OpenSSL error" : buf;
}

}  // namespace

absl::StatusOr<std::unique_ptr<httplib::Server>> MakeTlsServer(absl::string_view name, const std::string& cert_file,
                                                               const std::string& key_file) {
  absl::Status error = absl::InternalError(absl::StrCat(name, " TLS: OpenSSL cannot make a context"));
  auto server = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(&ctx, cert_file.c_str()) != 1) {
      error = absl::InvalidArgumentError(absl::StrCat(name, " TLS: the certificate ", cert_file, ": ", OpenSslError()));
      return false;
    }
    if (SSL_CTX_use_PrivateKey_file(&ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(&ctx) != 1) {
      error = absl::InvalidArgumentError(absl::StrCat(
          name, " TLS: the key ", key_file, " does not fit the certificate ", cert_file, ": ", OpenSslError()));
      return false;
    }
    error = absl::OkStatus();
    return true;
  });
  if (!error.ok()) return error;
  return server;
}

}  // namespace gradsync::http

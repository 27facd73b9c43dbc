// The HTTPS half of Server: an httplib server whose TLS context is built with the OpenSSL the
// process links, so a bad certificate or key is named before anything listens.
#pragma once

#include <memory>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace gradsync::http {

// INVALID_ARGUMENT naming the file when the certificate chain or the key cannot be loaded or do
// not fit each other. TLS 1.2 is the oldest version offered.
absl::StatusOr<std::unique_ptr<httplib::Server>> MakeTlsServer(absl::string_view name, const std::string& cert_file,
                                                               const std::string& key_file);

}  // namespace gradsync::http

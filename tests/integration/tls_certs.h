// Certificates for tests that run TLS servers, made with the openssl CLI and a config of our own,
// so the result does not depend on the machine's openssl.cnf.
#pragma once

#include <string>

namespace gradsync::testing {

// The openssl CLI on PATH, or "" (scripts/install-deps.sh installs it).
std::string FindOpenssl();

// Writes dir/`name`.pem and dir/`name`.key: a self-signed CA. True on success; openssl's output
// goes to dir/openssl.log.
bool MakeCa(const std::string& dir, const std::string& name);

// Writes dir/server.pem and dir/server.key, signed by dir/ca.pem, for a server certificate whose
// names are `subject_alt_names` in openssl's syntax ("IP:127.0.0.1,DNS:localhost").
bool MakeServerCert(const std::string& dir, const std::string& subject_alt_names);

}  // namespace gradsync::testing

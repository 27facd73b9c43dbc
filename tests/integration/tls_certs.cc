#include "tls_certs.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli_harness.h"

namespace gradsync::testing {
namespace {

// The extensions of a CA and of a server certificate; the server's names follow.
constexpr char kOpensslConfig[] = R"([req]
distinguished_name = dn
prompt = no
[dn]
CN = gradsync test
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = )";

// Writes dir/openssl.cnf with `subject_alt_names` as the server's names.
void WriteConfig(const std::string& dir, const std::string& subject_alt_names) {
  std::ofstream(dir + "/openssl.cnf") << kOpensslConfig << subject_alt_names << "\n";
}

// Runs the openssl CLI in `dir`; true when it exits 0 (its output goes to dir/openssl.log).
bool Openssl(const std::string& dir, const std::vector<std::string>& args) {
  const std::string openssl = FindOpenssl();
  if (openssl.empty()) return false;
  const pid_t pid = StartBinaryAt(openssl, args, dir + "/openssl.log");
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

std::string FindOpenssl() {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    const std::string candidate = absl::StrCat(dir, "/openssl");
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

bool MakeCa(const std::string& dir, const std::string& name) {
  WriteConfig(dir, "DNS:localhost");
  return Openssl(dir, {"req", "-x509", "-config", dir + "/openssl.cnf", "-extensions", "ca", "-newkey", "rsa:2048",
                       "-nodes", "-keyout", dir + "/" + name + ".key", "-out", dir + "/" + name + ".pem", "-days", "2",
                       "-subj", "/CN=" + name});
}

bool MakeServerCert(const std::string& dir, const std::string& subject_alt_names) {
  WriteConfig(dir, subject_alt_names);
  return Openssl(dir, {"req", "-new", "-config", dir + "/openssl.cnf", "-newkey", "rsa:2048", "-nodes", "-keyout",
                       dir + "/server.key", "-out", dir + "/server.csr", "-subj", "/CN=gradsync test server"}) &&
         Openssl(dir, {"x509", "-req", "-in", dir + "/server.csr", "-CA", dir + "/ca.pem", "-CAkey", dir + "/ca.key",
                       "-CAcreateserial", "-out", dir + "/server.pem", "-days", "2", "-extfile", dir + "/openssl.cnf",
                       "-extensions", "server"});
}

}  // namespace gradsync::testing

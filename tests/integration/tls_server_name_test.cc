// The port-forward case of a TLS deployment: the coordinator's certificate names only its Service
// ("gradsync-coordinator", no IP, no localhost) while clients dial 127.0.0.1. Verification against
// 127.0.0.1 fails and says to pass --tls-server-name; with it (or GRADSYNC_TLS_SERVER_NAME) the CLI
// gets through over gRPC and https REST, healthcheck too, and so does a worker given
// --tls_server_name. A wrong name still fails: the name is verified, not verification skipped.
#include <stdlib.h>
#include <sys/types.h>

#include <fstream>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gtest/gtest.h"
#include "tls_certs.h"

namespace gradsync::testing {
namespace {

constexpr char kServiceName[] = "gradsync-coordinator";

class TlsServerName : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty());
    ASSERT_FALSE(FindOpenssl().empty()) << "the openssl CLI is needed (scripts/install-deps.sh installs it)";
    ASSERT_TRUE(MakeCa(dir_, "ca") && MakeServerCert(dir_, absl::StrCat("DNS:", kServiceName)))
        << ReadFile(dir_ + "/openssl.log");
    std::ofstream(dir_ + "/user.token") << "user-token-for-tls-names\n";
    std::ofstream(dir_ + "/cluster.token") << "cluster-token-for-tls-names\n";
    const pid_t coordinator =
        children_.Start({"gradsync-coordinator", "--listen=127.0.0.1:0", "--rest_listen=127.0.0.1:0",
                         "--metrics_listen=127.0.0.1:0", "--state_dir=" + dir_ + "/state",
                         "--artifact_root=" + dir_ + "/artifacts", "--auth_token_file=" + dir_ + "/user.token",
                         "--cluster_token_file=" + dir_ + "/cluster.token", "--tls_cert_file=" + dir_ + "/server.pem",
                         "--tls_key_file=" + dir_ + "/server.key", "--endpoints_file=" + dir_ + "/coordinator.json"},
                        dir_ + "/coordinator.log");
    std::map<std::string, std::string> endpoints;
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (endpoints["rest"].empty() && absl::Now() < deadline && ProcessAlive(coordinator)) {
      absl::SleepFor(absl::Milliseconds(50));
      endpoints = ParseFlatJson(ReadFile(dir_ + "/coordinator.json"));
    }
    ASSERT_FALSE(endpoints["rest"].empty()) << ReadFile(dir_ + "/coordinator.log");
    grpc_ = endpoints["grpc"];
    rest_ = "https://" + endpoints["rest"];
  }

  // `gradsync list` against `address` with the token and the CA, then `extra`.
  CommandResult List(const std::string& address, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {"gradsync", "list",   "--address",    address,
                                     "--tls-ca", CaFile(), "--token-file", dir_ + "/user.token"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunBinary(args);
  }

  std::string CaFile() const { return dir_ + "/ca.pem"; }

  Children children_;
  std::string dir_, grpc_, rest_;
};

// The same over both transports: refused against 127.0.0.1 with the advice, accepted with the
// certificate's name, refused with another name.
void ExpectVerifiedAgainstTheGivenName(const CommandResult& plain, const CommandResult& named,
                                       const CommandResult& wrong) {
  EXPECT_EQ(plain.exit_code, 1) << plain.out;
  EXPECT_NE(plain.err.find("does not name the host dialled"), std::string::npos) << plain.err;
  EXPECT_NE(plain.err.find("--tls-server-name"), std::string::npos) << plain.err;
  EXPECT_EQ(named.exit_code, 0) << named.err;
  EXPECT_TRUE(absl::StartsWith(named.out, "ID")) << named.out;
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out;
  EXPECT_EQ(wrong.out, "");
}

TEST_F(TlsServerName, CliOverGrpcVerifiesTheCertificateAgainstTheGivenName) {
  ExpectVerifiedAgainstTheGivenName(List(grpc_), List(grpc_, {"--tls-server-name", kServiceName}),
                                    List(grpc_, {"--tls-server-name=gradsync-other"}));
}

TEST_F(TlsServerName, CliOverHttpsRestVerifiesTheCertificateAgainstTheGivenName) {
  ExpectVerifiedAgainstTheGivenName(List(rest_), List(rest_, {"--tls-server-name", kServiceName}),
                                    List(rest_, {"--tls-server-name=gradsync-other"}));
}

TEST_F(TlsServerName, TheEnvironmentNamesTheServerAndTheFlagOutranksIt) {
  ASSERT_EQ(::setenv("GRADSYNC_TLS_SERVER_NAME", kServiceName, 1), 0);
  absl::Cleanup unset = [] { ::unsetenv("GRADSYNC_TLS_SERVER_NAME"); };
  for (const std::string& address : {grpc_, rest_}) {
    CommandResult r = List(address);
    EXPECT_EQ(r.exit_code, 0) << address << ": " << r.err;
    EXPECT_EQ(List(address, {"--tls-server-name", "gradsync-other"}).exit_code, 1) << address;
  }
  ASSERT_EQ(::setenv("GRADSYNC_TLS_SERVER_NAME", "gradsync-other", 1), 0);
  EXPECT_EQ(List(grpc_, {"--tls-server-name", kServiceName}).exit_code, 0);
}

TEST_F(TlsServerName, RefusedWithoutTlsAndWhenNotAName) {
  CommandResult no_ca = RunBinary({"gradsync", "list", "--address", grpc_, "--tls-server-name", kServiceName});
  EXPECT_EQ(no_ca.exit_code, 2);
  EXPECT_NE(no_ca.err.find("--tls-server-name is for TLS servers"), std::string::npos) << no_ca.err;
  EXPECT_NE(no_ca.err.find("--tls-ca"), std::string::npos) << no_ca.err;
  const std::string http = "http://" + rest_.substr(8);
  CommandResult plain_http = RunBinary({"gradsync", "list", "--address", http, "--tls-server-name", kServiceName});
  EXPECT_EQ(plain_http.exit_code, 2);
  EXPECT_NE(plain_http.err.find("use https://"), std::string::npos) << plain_http.err;
  CommandResult not_a_name = List(grpc_, {"--tls-server-name", "host:443"});
  EXPECT_EQ(not_a_name.exit_code, 2);
  EXPECT_NE(not_a_name.err.find("--tls-server-name: \"host:443\" is not a DNS name"), std::string::npos)
      << not_a_name.err;
}

TEST_F(TlsServerName, HealthcheckVerifiesTheCertificateAgainstTheGivenName) {
  CommandResult plain = RunBinary({"gradsync", "healthcheck", grpc_, "--tls-ca", CaFile(), "--timeout", "2"});
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_NE(plain.err.find("--tls-server-name"), std::string::npos) << plain.err;
  CommandResult named =
      RunBinary({"gradsync", "healthcheck", grpc_, "--tls-ca", CaFile(), "--tls-server-name", kServiceName});
  EXPECT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(named.out, grpc_ + ": SERVING\n");
  EXPECT_EQ(RunBinary({"gradsync", "healthcheck", grpc_, "--tls-ca", CaFile(), "--tls-server-name", "gradsync-other",
                       "--timeout", "2"})
                .exit_code,
            1);
  CommandResult no_ca = RunBinary({"gradsync", "healthcheck", grpc_, "--tls-server-name", kServiceName});
  EXPECT_EQ(no_ca.exit_code, 2);
  EXPECT_NE(no_ca.err.find("--tls-ca"), std::string::npos) << no_ca.err;
}

TEST_F(TlsServerName, WorkerWithTheNameRegistersAndTrains) {
  const std::vector<std::string> tls = {"--cluster_token_file=" + dir_ + "/cluster.token", "--tls_ca_file=" + CaFile()};
  // Without the name the worker cannot verify the coordinator and says why.
  const pid_t unnamed = children_.Start(WorkerArgs(grpc_, tls), dir_ + "/unnamed.log");
  const absl::Time deadline = absl::Now() + absl::Seconds(15);
  while (absl::Now() < deadline && !absl::StrContains(ReadFile(dir_ + "/unnamed.log"), "peer certificate")) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(absl::StrContains(ReadFile(dir_ + "/unnamed.log"), "peer certificate"))
      << ReadFile(dir_ + "/unnamed.log");
  children_.Stop(unnamed);

  std::vector<std::string> named = tls;
  named.push_back(absl::StrCat("--tls_server_name=", kServiceName));
  children_.Start(WorkerArgs(grpc_, named), dir_ + "/worker.log");
  const std::vector<std::string> connection = {"--address",         grpc_,        "--tls-ca",     CaFile(),
                                               "--tls-server-name", kServiceName, "--token-file", dir_ + "/user.token"};
  std::vector<std::string> submit = {"gradsync",
                                     "submit",
                                     ExamplePath("mlp.yaml"),
                                     "--set",
                                     "training.worldSize=1",
                                     "--set",
                                     "training.maxSteps=10",
                                     "--set",
                                     "training.epochs=0",
                                     "--wait"};
  submit.insert(submit.end(), connection.begin(), connection.end());
  CommandResult r = RunBinary(submit);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << ReadFile(dir_ + "/worker.log");

  // A name without the CA would talk plaintext: the worker refuses to start.
  CommandResult no_ca = RunBinary(WorkerArgs(grpc_, {absl::StrCat("--tls_server_name=", kServiceName)}));
  EXPECT_EQ(no_ca.exit_code, 2);
  EXPECT_NE(no_ca.err.find("--tls_server_name is for a TLS coordinator"), std::string::npos) << no_ca.err;
}

}  // namespace
}  // namespace gradsync::testing

// A coordinator serving TLS with a user token and a cluster token, certificates made with the
// openssl CLI: the CLI and healthcheck verify the server with the CA, the CLI reaches it over
// gRPC and https REST, a worker needs both the CA and the cluster token, and no token is written
// to any log.
#include <unistd.h>

#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gtest/gtest.h"
#include "tls_certs.h"

namespace gradsync::testing {
namespace {

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

class Security : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty());
    ASSERT_FALSE(FindOpenssl().empty()) << "the openssl CLI is needed (scripts/install-deps.sh installs it)";
    ASSERT_TRUE(MakeCa(dir_, "ca") && MakeServerCert(dir_, "IP:127.0.0.1,DNS:localhost") && MakeCa(dir_, "other-ca"))
        << ReadFile(dir_ + "/openssl.log");
    // Unique per run, so a match in a log can only come from this test's tokens.
    const std::string run = absl::StrCat(::getpid(), "-", absl::ToUnixMicros(absl::Now()));
    user_token_ = "user-token-" + run;
    cluster_token_ = "cluster-token-" + run;
    wrong_cluster_token_ = "not-the-cluster-token-" + run;
    WriteFile(dir_ + "/user.token", user_token_ + "\n");
    WriteFile(dir_ + "/cluster.token", cluster_token_ + "\n");
    WriteFile(dir_ + "/wrong-cluster.token", wrong_cluster_token_ + "\n");
  }

  // Starts the coordinator with TLS and both tokens, REST too when `rest`; fills grpc_/rest_.
  void StartCoordinator(bool rest) {
    const std::vector<std::string> args = {"gradsync-coordinator",
                                           "--listen=127.0.0.1:0",
                                           rest ? "--rest_listen=127.0.0.1:0" : "--rest_listen=",
                                           "--metrics_listen=127.0.0.1:0",
                                           "--state_dir=" + dir_ + "/state",
                                           "--artifact_root=" + dir_ + "/artifacts",
                                           "--auth_token_file=" + dir_ + "/user.token",
                                           "--cluster_token_file=" + dir_ + "/cluster.token",
                                           "--tls_cert_file=" + dir_ + "/server.pem",
                                           "--tls_key_file=" + dir_ + "/server.key",
                                           "--endpoints_file=" + dir_ + "/coordinator.json"};
    const pid_t coordinator = children_.Start(args, dir_ + "/coordinator.log");
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    std::map<std::string, std::string> endpoints;
    while (endpoints.empty() && absl::Now() < deadline && ProcessAlive(coordinator)) {
      absl::SleepFor(absl::Milliseconds(50));
      endpoints = ParseFlatJson(ReadFile(dir_ + "/coordinator.json"));
    }
    grpc_ = endpoints["grpc"];
    ASSERT_FALSE(grpc_.empty()) << ReadFile(dir_ + "/coordinator.log");
    if (rest) {
      ASSERT_FALSE(endpoints["rest"].empty()) << ReadFile(dir_ + "/coordinator.log");
      rest_ = "https://" + endpoints["rest"];
    }
  }

  pid_t StartWorker(const std::string& token_file, const std::string& log) {
    return children_.Start(
        WorkerArgs(grpc_, {"--cluster_token_file=" + dir_ + "/" + token_file, "--tls_ca_file=" + dir_ + "/ca.pem"}),
        dir_ + "/" + log);
  }

  // `gradsync ARGS --address ADDRESS --token <user token> --tls-ca ca.pem`.
  CommandResult Cli(std::vector<std::string> args, const std::string& address) const {
    args.insert(args.end(), {"--address", address, "--token", user_token_, "--tls-ca", dir_ + "/ca.pem"});
    return RunBinary(args);
  }

  // Submits a short mlp.yaml job for one worker; returns its name or fails the test.
  std::string Submit(const std::string& address) const {
    CommandResult r = Cli({"gradsync", "submit", ExamplePath("mlp.yaml"), "--set", "training.worldSize=1", "--set",
                           "training.maxSteps=30", "--set", "training.epochs=0", "--set", "training.logEvery=10"},
                          address);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err << ReadFile(dir_ + "/coordinator.log");
    EXPECT_TRUE(absl::StartsWith(r.out, "jobs/")) << r.out;
    return r.out.substr(0, r.out.find('\n'));
  }

  Children children_;
  std::string dir_, user_token_, cluster_token_, wrong_cluster_token_, grpc_, rest_;
};

TEST_F(Security, HealthcheckVerifiesTheServerWithTheGivenCa) {
  StartCoordinator(false);
  ASSERT_FALSE(HasFailure());
  CommandResult ok = RunBinary({"gradsync", "healthcheck", grpc_, "--tls-ca", dir_ + "/ca.pem", "--timeout", "20"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, grpc_ + ": SERVING\n");
  // The certificate names localhost too.
  const std::string port = grpc_.substr(grpc_.rfind(':') + 1);
  EXPECT_EQ(RunBinary({"gradsync", "healthcheck", "localhost:" + port, "--tls-ca", dir_ + "/ca.pem"}).exit_code, 0);

  CommandResult plaintext = RunBinary({"gradsync", "healthcheck", grpc_, "--timeout", "2"});
  EXPECT_EQ(plaintext.exit_code, 1);
  EXPECT_NE(plaintext.err.find("--tls-ca"), std::string::npos) << plaintext.err;
  CommandResult other_ca =
      RunBinary({"gradsync", "healthcheck", grpc_, "--tls-ca", dir_ + "/other-ca.pem", "--timeout", "2"});
  EXPECT_EQ(other_ca.exit_code, 1) << other_ca.out;
  CommandResult not_pem = RunBinary({"gradsync", "healthcheck", grpc_, "--tls-ca", dir_ + "/user.token"});
  EXPECT_EQ(not_pem.exit_code, 2);
  EXPECT_NE(not_pem.err.find("not a PEM certificate"), std::string::npos) << not_pem.err;
  EXPECT_EQ(not_pem.err.find(user_token_), std::string::npos) << not_pem.err;
}

TEST_F(Security, CliOverGrpcWithTlsAndToken) {
  StartCoordinator(false);
  ASSERT_FALSE(HasFailure());
  const std::string job = Submit(grpc_);
  ASSERT_FALSE(HasFailure());
  CommandResult get = Cli({"gradsync", "get", job, "-o", "json"}, grpc_);
  EXPECT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(ParseFlatJson(get.out)["name"], job);

  // The same call without the CA (a plaintext channel) or with another CA does not get through.
  CommandResult plaintext = RunBinary({"gradsync", "get", job, "--address", grpc_, "--token", user_token_});
  EXPECT_EQ(plaintext.exit_code, 1);
  EXPECT_NE(plaintext.err.find("UNAVAILABLE"), std::string::npos) << plaintext.err;
  EXPECT_NE(plaintext.err.find(grpc_), std::string::npos) << plaintext.err;
  CommandResult other_ca = RunBinary(
      {"gradsync", "get", job, "--address", grpc_, "--token", user_token_, "--tls-ca", dir_ + "/other-ca.pem"});
  EXPECT_EQ(other_ca.exit_code, 1);
  EXPECT_NE(other_ca.err.find("UNAVAILABLE"), std::string::npos) << other_ca.err;

  // TLS without the user token is refused by the job API.
  CommandResult anonymous = RunBinary({"gradsync", "get", job, "--address", grpc_, "--tls-ca", dir_ + "/ca.pem"});
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_NE(anonymous.err.find("UNAUTHENTICATED"), std::string::npos) << anonymous.err;
}

TEST_F(Security, CliOverHttpsRest) {
  StartCoordinator(true);
  ASSERT_FALSE(HasFailure());
  const std::string job = Submit(rest_);
  ASSERT_FALSE(HasFailure());
  CommandResult get = Cli({"gradsync", "get", job, "-o", "json"}, rest_);
  EXPECT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(ParseFlatJson(get.out)["name"], job);
  EXPECT_EQ(get.out, Cli({"gradsync", "get", job, "-o", "json"}, grpc_).out);

  // The system's CAs do not know the test CA; plain http to the https port gets no answer.
  CommandResult system_cas = RunBinary({"gradsync", "get", job, "--address", rest_, "--token", user_token_});
  EXPECT_EQ(system_cas.exit_code, 1);
  EXPECT_NE(system_cas.err.find("UNAVAILABLE"), std::string::npos) << system_cas.err;
  EXPECT_NE(system_cas.err.find(rest_), std::string::npos) << system_cas.err;
  const std::string http = "http://" + rest_.substr(8);
  CommandResult plain = RunBinary({"gradsync", "get", job, "--address", http, "--token", user_token_});
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_EQ(plain.out, "");

  EXPECT_EQ(ReadFile(dir_ + "/coordinator.log").find(user_token_), std::string::npos);
}

TEST_F(Security, WorkersNeedTheClusterToken) {
  StartCoordinator(false);
  ASSERT_FALSE(HasFailure());
  const std::string job = Submit(grpc_);
  ASSERT_FALSE(HasFailure());

  // A worker with the wrong cluster token retries registering and is refused every time.
  const pid_t impostor = StartWorker("wrong-cluster.token", "impostor.log");
  const absl::Time deadline = absl::Now() + absl::Seconds(15);
  while (absl::Now() < deadline && !absl::StrContains(ReadFile(dir_ + "/impostor.log"), "UNAUTHENTICATED")) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(absl::StrContains(ReadFile(dir_ + "/impostor.log"), "UNAUTHENTICATED"))
      << ReadFile(dir_ + "/impostor.log");
  absl::SleepFor(absl::Seconds(1));
  EXPECT_EQ(ParseFlatJson(Cli({"gradsync", "get", job, "-o", "json"}, grpc_).out)["state"], "PENDING");
  children_.Stop(impostor);

  StartWorker("cluster.token", "worker.log");
  CommandResult watch = Cli({"gradsync", "watch", job, "-o", "json"}, grpc_);
  EXPECT_EQ(watch.exit_code, 0) << watch.err << ReadFile(dir_ + "/worker.log");
  EXPECT_EQ(ParseFlatJson(watch.out)["state"], "SUCCEEDED") << watch.out;

  for (const char* log : {"coordinator.log", "impostor.log", "worker.log"}) {
    const std::string text = ReadFile(absl::StrCat(dir_, "/", log));
    EXPECT_FALSE(text.empty()) << log;
    for (const std::string& token : {user_token_, cluster_token_, wrong_cluster_token_}) {
      EXPECT_EQ(text.find(token), std::string::npos) << log << " contains a token";
    }
  }
}

}  // namespace
}  // namespace gradsync::testing

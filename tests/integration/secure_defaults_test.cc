// Secure defaults, against the real binaries. A service refuses to listen beyond loopback without
// the tokens of what it serves, naming the flags and the way out (--insecure); it serves on
// loopback without them, and anywhere with --insecure, saying so on every start. /metrics and the
// metrics JSON API refuse readers without the metrics token. A local cluster makes its own tokens,
// readable by its user alone, that its services require and the CLI finds through --state-dir.
// A --token given on the command line is gone from /proc/<pid>/cmdline.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gradsync/cluster/local_cluster_file.h"
#include "gtest/gtest.h"
#include "http_client.h"

namespace gradsync::testing {
namespace {

// The exit code of `pid` once it exits within `timeout`; -1 (after killing it) if it still runs.
int ExitCodeWithin(pid_t pid, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (absl::Now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      return -1;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Waits until the endpoints file a service writes once serving appears; its fields, or none if
// the service exited first or took longer than 20 s.
std::map<std::string, std::string> AwaitEndpoints(const std::string& path, pid_t pid) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  std::map<std::string, std::string> endpoints;
  while (endpoints.empty() && absl::Now() < deadline && ProcessAlive(pid)) {
    absl::SleepFor(absl::Milliseconds(50));
    endpoints = ParseFlatJson(ReadFile(path));
  }
  return endpoints;
}

// Waits until the file `log` holds `text` (true) or 20 s pass (false).
bool AwaitLog(const std::string& log, const std::string& text) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!absl::StrContains(ReadFile(log), text)) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return true;
}

int PortOf(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

// The permission bits of `path`, or -1.
int ModeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
}

std::string TokenIn(const std::string& path) {
  std::string token = ReadFile(path);
  return token.substr(0, token.find('\n'));
}

std::map<std::string, std::string> Bearer(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

// `gradsync local up` in a directory of its own, brought down when the test ends however it ends.
class LocalUp {
 public:
  explicit LocalUp(const std::vector<std::string>& extra = {}) : dir_(MakeTempDir()) {
    std::vector<std::string> args = {"gradsync", "local", "up", "--workers", "1", "--state-dir", dir_};
    args.insert(args.end(), extra.begin(), extra.end());
    up_ = RunBinary(args);
  }
  ~LocalUp() { RunBinary({"gradsync", "local", "down", "--state-dir", dir_}); }

  const std::string& dir() const { return dir_; }
  const CommandResult& up() const { return up_; }

 private:
  std::string dir_;
  CommandResult up_;
};

struct Service {
  std::string name;
  std::vector<std::string> args;
  std::vector<std::string> named;  // what the refusal must say
};

TEST(SecureDefaults, EveryServiceRefusesItsDefaultListenersWithoutTokens) {
  const std::string dir = MakeTempDir();
  const std::vector<Service> services = {
      {"coordinator",
       {"gradsync-coordinator", "--artifact_dir=" + dir + "/artifacts"},
       {"--listen=0.0.0.0:7070 needs --cluster_token_file and --auth_token_file",
        "--rest_listen=0.0.0.0:8080 needs --auth_token_file",
        "--metrics_listen=0.0.0.0:9465 needs --metrics_token_file", "--insecure"}},
      {"metrics",
       {"gradsync-metrics"},
       {"--listen=0.0.0.0:7071 needs --cluster_token_file", "--http_listen=0.0.0.0:9464 needs --metrics_token_file",
        "--api_listen=0.0.0.0:9466 needs --metrics_token_file", "--insecure"}},
      {"worker",
       {"gradsync-worker", "--coordinator=127.0.0.1:1", "--device=cpu"},
       {"--metrics_listen=0.0.0.0:9467 needs --metrics_token_file", "--insecure"}},
  };
  for (const Service& s : services) {
    const std::string log = dir + "/" + s.name + ".log";
    const int code = ExitCodeWithin(StartBinary(s.args, log), absl::Seconds(20));
    const std::string text = ReadFile(log);
    EXPECT_NE(code, -1) << s.name << " serves with its defaults and no tokens:\n" << text;
    EXPECT_NE(code, 0) << s.name << ":\n" << text;
    for (const std::string& named : s.named) {
      EXPECT_TRUE(absl::StrContains(text, named)) << s.name << " does not say \"" << named << "\":\n" << text;
    }
  }
}

TEST(SecureDefaults, OnLoopbackEveryServiceServesWithoutTokens) {
  const std::string dir = MakeTempDir();
  Children children;
  // 127.0.0.2 is loopback too: all of 127.0.0.0/8 is.
  const pid_t coordinator = children.Start(
      {"gradsync-coordinator", "--listen=127.0.0.1:0", "--rest_listen=127.0.0.2:0", "--metrics_listen=127.0.0.1:0",
       "--artifact_dir=" + dir + "/artifacts", "--endpoints_file=" + dir + "/coordinator.json"},
      dir + "/coordinator.log");
  const pid_t metrics = children.Start({"gradsync-metrics", "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
                                        "--api_listen=127.0.0.1:0", "--endpoints_file=" + dir + "/metrics.json"},
                                       dir + "/metrics.log");
  const std::map<std::string, std::string> c = AwaitEndpoints(dir + "/coordinator.json", coordinator);
  ASSERT_FALSE(c.empty()) << ReadFile(dir + "/coordinator.log");
  const std::map<std::string, std::string> m = AwaitEndpoints(dir + "/metrics.json", metrics);
  ASSERT_FALSE(m.empty()) << ReadFile(dir + "/metrics.log");
  EXPECT_EQ(RunBinary({"gradsync", "list", "--address", c.at("grpc")}).exit_code, 0);
  EXPECT_EQ(HttpRequest("GET", PortOf(m.at("http")), "/metrics").status, 200);
  EXPECT_EQ(HttpRequest("GET", PortOf(m.at("api")), "/v1/jobs").status, 200);
  for (const char* log : {"/coordinator.log", "/metrics.log"}) {
    EXPECT_FALSE(absl::StrContains(ReadFile(dir + log), "INSECURE")) << log;
  }
}

TEST(SecureDefaults, InsecureServesBeyondLoopbackAndWarnsOnEveryStart) {
  const std::string dir = MakeTempDir();
  Children children;
  for (int start = 0; start < 2; ++start) {
    const std::string log = absl::StrCat(dir, "/coordinator-", start, ".log");
    const std::string endpoints = absl::StrCat(dir, "/coordinator-", start, ".json");
    const pid_t coordinator = children.Start(
        {"gradsync-coordinator", "--listen=0.0.0.0:0", "--rest_listen=0.0.0.0:0", "--metrics_listen=0.0.0.0:0",
         "--insecure", "--artifact_dir=" + dir + "/artifacts", "--endpoints_file=" + endpoints},
        log);
    const std::map<std::string, std::string> c = AwaitEndpoints(endpoints, coordinator);
    ASSERT_FALSE(c.empty()) << ReadFile(log);
    EXPECT_EQ(RunBinary({"gradsync", "healthcheck", c.at("grpc")}).exit_code, 0);
    const std::string text = ReadFile(log);
    EXPECT_TRUE(absl::StrContains(text, "INSECURE")) << "start " << start << ":\n" << text;
    EXPECT_TRUE(absl::StrContains(text, "--listen=0.0.0.0:0 needs --cluster_token_file and --auth_token_file")) << text;
    children.Stop(coordinator);
  }

  const pid_t metrics = children.Start({"gradsync-metrics", "--listen=0.0.0.0:0", "--http_listen=0.0.0.0:0",
                                        "--api_listen=0.0.0.0:0", "--insecure", "--endpoints_file=" + dir + "/m.json"},
                                       dir + "/metrics.log");
  ASSERT_FALSE(AwaitEndpoints(dir + "/m.json", metrics).empty()) << ReadFile(dir + "/metrics.log");
  EXPECT_TRUE(absl::StrContains(ReadFile(dir + "/metrics.log"), "INSECURE")) << ReadFile(dir + "/metrics.log");

  children.Start(WorkerArgs("127.0.0.1:1", {"--metrics_listen=0.0.0.0:0", "--insecure"}), dir + "/worker.log");
  EXPECT_TRUE(AwaitLog(dir + "/worker.log", "INSECURE")) << ReadFile(dir + "/worker.log");
}

TEST(SecureDefaults, MetricsReadersNeedTheMetricsToken) {
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/metrics.token") << "metrics-secret-of-this-test\n";
  std::ofstream(dir + "/cluster.token") << "cluster-secret-of-this-test\n";
  Children children;
  const pid_t metrics =
      children.Start({"gradsync-metrics", "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
                      "--api_listen=127.0.0.1:0", "--cluster_token_file=" + dir + "/cluster.token",
                      "--metrics_token_file=" + dir + "/metrics.token", "--endpoints_file=" + dir + "/metrics.json"},
                     dir + "/metrics.log");
  const std::map<std::string, std::string> m = AwaitEndpoints(dir + "/metrics.json", metrics);
  ASSERT_FALSE(m.empty()) << ReadFile(dir + "/metrics.log");
  for (const auto& [endpoint, path] : {std::pair{"http", "/metrics"}, std::pair{"api", "/v1/jobs"}}) {
    const int port = PortOf(m.at(endpoint));
    const HttpResponse anonymous = HttpRequest("GET", port, path);
    EXPECT_EQ(anonymous.status, 401) << path << ": " << anonymous.body;
    EXPECT_EQ(anonymous.headers.count("www-authenticate") ? anonymous.headers.at("www-authenticate") : "", "Bearer");
    for (const std::string& wrong : {"cluster-secret-of-this-test", "metrics-secret-of-this-test-not"}) {
      const HttpResponse refused = HttpRequest("GET", port, path, Bearer(wrong));
      EXPECT_EQ(refused.status, 401) << path << " with " << wrong;
      EXPECT_FALSE(absl::StrContains(refused.body, "secret")) << refused.body;
    }
    EXPECT_EQ(HttpRequest("GET", port, path, Bearer("metrics-secret-of-this-test")).status, 200) << path;
  }
  // The JSON API answers in its own error format, code UNAUTHENTICATED (16).
  EXPECT_EQ(ParseFlatJson(HttpRequest("GET", PortOf(m.at("api")), "/v1/jobs").body)["code"], "16");
}

TEST(SecureDefaults, LocalUpMakesPrivateTokensItsServicesRequireAndTheCliFindsThem) {
  const LocalUp local;
  const std::string& dir = local.dir();
  const CommandResult& up = local.up();
  ASSERT_EQ(up.exit_code, 0) << up.err;
  absl::StatusOr<cluster::LocalClusterFile> cluster = cluster::ReadLocalClusterFile(dir);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::map<std::string, std::string>& files = cluster->token_files;
  ASSERT_EQ(files.size(), 3u) << up.out;
  EXPECT_EQ(ModeOf(dir + "/tokens"), 0700);
  std::set<std::string> tokens;
  for (const char* name : {"auth", "cluster", "metrics"}) {
    ASSERT_EQ(files.count(name), 1u) << name;
    EXPECT_EQ(files.at(name), absl::StrCat(dir, "/tokens/", name, ".token"));
    EXPECT_EQ(ModeOf(files.at(name)), 0600) << files.at(name);
    EXPECT_GE(TokenIn(files.at(name)).size(), 32u) << name;
    tokens.insert(TokenIn(files.at(name)));
  }
  EXPECT_EQ(tokens.size(), 3u) << "the three tokens must differ";
  const std::string address = cluster->endpoints.at("coordinator");

  // Loopback is no excuse: another user of the machine reaches the ports, not the tokens.
  CommandResult anonymous = RunBinary({"gradsync", "list", "--address", address});
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(anonymous.err, "UNAUTHENTICATED")) << anonymous.err;
  CommandResult rest = RunBinary({"gradsync", "list", "--address", "http://" + cluster->endpoints.at("rest")});
  EXPECT_TRUE(absl::StrContains(rest.err, "UNAUTHENTICATED")) << rest.err;
  for (const char* name : {"coordinatorMetrics", "metricsHttp"}) {
    EXPECT_EQ(HttpRequest("GET", PortOf(cluster->endpoints.at(name)), "/metrics").status, 401) << name;
  }
  // A worker writes its endpoints file once serving, maybe after the cluster file appeared.
  ASSERT_TRUE(AwaitLog(dir + "/worker-0.json", "metrics")) << ReadFile(dir + "/logs/worker-0.log");
  const std::string worker_metrics = ParseFlatJson(ReadFile(dir + "/worker-0.json"))["metrics"];
  EXPECT_EQ(HttpRequest("GET", PortOf(worker_metrics), "/metrics").status, 401);
  EXPECT_EQ(HttpRequest("GET", PortOf(worker_metrics), "/metrics", Bearer(TokenIn(files.at("metrics")))).status, 200);
  EXPECT_EQ(HttpRequest("GET", PortOf(cluster->endpoints.at("metricsApi")), "/v1/jobs").status, 401);

  // The CLI finds the address and the token through the state directory, or takes the file.
  CommandResult listed = RunBinary({"gradsync", "list", "--state-dir", dir});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  CommandResult with_file = RunBinary({"gradsync", "list", "--address", address, "--token-file", files.at("auth")});
  EXPECT_EQ(with_file.exit_code, 0) << with_file.err;
  ::setenv("GRADSYNC_TOKEN_FILE", files.at("auth").c_str(), 1);
  CommandResult with_env = RunBinary({"gradsync", "list", "--address", address});
  ::unsetenv("GRADSYNC_TOKEN_FILE");
  EXPECT_EQ(with_env.exit_code, 0) << with_env.err;
  CommandResult both = RunBinary({"gradsync", "list", "--address", address, "--state-dir", dir});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(both.err, "--address or --state-dir")) << both.err;
}

TEST(SecureDefaults, RunMakesPrivateTokensItsServicesRequire) {
  const std::string dir = MakeTempDir();
  CommandResult run = RunBinary({"gradsync", "run", ExamplePath("mlp.yaml"), "--workers", "1", "-o", "json",
                                 "--state-dir", dir, "--set", "training.maxSteps=5", "--set", "training.epochs=0"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(ParseFlatJson(run.out)["state"], "SUCCEEDED") << run.out;
  for (const char* name : {"auth", "cluster", "metrics"}) {
    const std::string file = absl::StrCat(dir, "/tokens/", name, ".token");
    EXPECT_EQ(ModeOf(file), 0600) << file;
    EXPECT_GE(TokenIn(file).size(), 32u) << file;
  }
  const std::string coordinator = ReadFile(dir + "/logs/coordinator.log");
  EXPECT_TRUE(absl::StrContains(coordinator, "job APIs require a bearer token")) << coordinator;
  EXPECT_TRUE(absl::StrContains(coordinator, "workers must present the cluster token")) << coordinator;
  for (const char* name : {"auth", "cluster", "metrics"}) {
    const std::string token = TokenIn(absl::StrCat(dir, "/tokens/", name, ".token"));
    EXPECT_FALSE(absl::StrContains(run.out + run.err + coordinator, token)) << "the " << name << " token was printed";
  }
}

// The command line of `pid` with its NULs as spaces.
std::string CommandLine(pid_t pid) {
  std::string cmdline = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  return cmdline;
}

TEST(SecureDefaults, ATokenOnTheCommandLineIsScrubbedFromProcCmdline) {
  const LocalUp local;
  const std::string& dir = local.dir();
  const CommandResult& up = local.up();
  ASSERT_EQ(up.exit_code, 0) << up.err;
  const std::string address = ParseFlatJson(up.out)["coordinator"];
  const std::string token = TokenIn(dir + "/tokens/auth.token");
  ASSERT_FALSE(token.empty());
  // Two ranks, one worker: the job stays PENDING and `watch` runs until stopped.
  CommandResult submit = RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--state-dir", dir});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string job = submit.out.substr(0, submit.out.find('\n'));

  Children children;
  const std::vector<std::vector<std::string>> forms = {{"--token", token}, {"--token=" + token}};
  for (size_t i = 0; i < forms.size(); ++i) {
    std::vector<std::string> args = {"gradsync", "watch", job, "--address", address};
    args.insert(args.end(), forms[i].begin(), forms[i].end());
    const std::string log = absl::StrCat(dir, "/watch-", i, ".log");
    const pid_t watch = children.Start(args, log);
    // Printing the job's first event means the arguments were parsed, and scrubbed, long since.
    ASSERT_TRUE(AwaitLog(log, "[Created]")) << ReadFile(log);
    const std::string cmdline = CommandLine(watch);
    EXPECT_TRUE(absl::StrContains(cmdline, "gradsync watch " + job)) << cmdline;
    EXPECT_TRUE(absl::StrContains(cmdline, "--token")) << cmdline;
    EXPECT_FALSE(absl::StrContains(cmdline, token)) << "the token is visible in /proc/" << watch << "/cmdline";
  }
}

}  // namespace
}  // namespace gradsync::testing

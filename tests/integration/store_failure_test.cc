// The real coordinator on a full disk (RLIMIT_FSIZE of 0 set on the running process, which takes
// no privilege): a cancel that cannot be stored answers 503 naming the database, the job stays as
// stored, health is NOT_SERVING over grpc.health.v1 and /healthz; once the disk has room the
// cancel is written, health returns, and a restarted coordinator has the job cancelled.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gtest/gtest.h"
#include "http_client.h"

namespace gradsync::testing {
namespace {

// Fills the disk for process `pid` (every write to a file fails), or frees it again.
void SetDiskFull(pid_t pid, bool full) {
  rlimit limit{};
  ASSERT_EQ(::prlimit(pid, RLIMIT_FSIZE, nullptr, &limit), 0);
  limit.rlim_cur = full ? 0 : limit.rlim_max;
  ASSERT_EQ(::prlimit(pid, RLIMIT_FSIZE, &limit, nullptr), 0);
}

// The port of `service` in the endpoints file, once the coordinator wrote it (0 after 20 s).
int EndpointPort(const std::string& path, const std::string& service) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline) {
    const std::string address = ParseFlatJson(ReadFile(path))[service];
    if (!address.empty()) return std::stoi(address.substr(address.rfind(':') + 1));
    absl::SleepFor(absl::Milliseconds(50));
  }
  return 0;
}

std::string StateOf(int rest, const std::string& id) {
  return ParseFlatJson(HttpRequest("GET", rest, "/v1/jobs/" + id).body)["state"];
}

TEST(StoreFailure, AFullDiskFailsTheCallAndHealthUntilTheChangeIsWritten) {
  // Ignored signals stay ignored across exec: a write past the limit fails instead of killing.
  ::signal(SIGXFSZ, SIG_IGN);
  const std::string dir = MakeTempDir();
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  const std::vector<std::string> args =
      CoordinatorArgs(address, dir, {"--state_dir=" + dir + "/state", "--endpoints_file=" + dir + "/endpoints.json"});
  Children children;
  pid_t c = children.Start(args, dir + "/coordinator-1.log");
  const int rest = EndpointPort(dir + "/endpoints.json", "rest");
  ASSERT_NE(rest, 0) << ReadFile(dir + "/coordinator-1.log");
  const HttpResponse created = HttpRequest("POST", rest, "/v1/jobs", {{"Content-Type", "application/json"}},
                                           R"({"name": "full", "training": {"worldSize": 2, "maxSteps": 5}})");
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string id = ParseFlatJson(created.body)["id"];

  SetDiskFull(c, true);
  const HttpResponse cancel = HttpRequest("POST", rest, "/v1/jobs/" + id + ":cancel");
  EXPECT_EQ(cancel.status, 503) << cancel.body;
  EXPECT_NE(cancel.body.find(dir + "/state/coordinator.db"), std::string::npos) << cancel.body;
  EXPECT_EQ(StateOf(rest, id), "PENDING") << "the API showed a cancel the database does not hold";
  EXPECT_EQ(HttpRequest("GET", rest, "/healthz").status, 503);
  const CommandResult health = RunBinary({"gradsync", "healthcheck", address, "--timeout", "5"});
  EXPECT_NE(health.exit_code, 0) << health.out << health.err;
  EXPECT_NE((health.out + health.err).find("NOT_SERVING"), std::string::npos) << health.out << health.err;

  SetDiskFull(c, false);
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (HttpRequest("GET", rest, "/healthz").status != 200 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_EQ(HttpRequest("GET", rest, "/healthz").status, 200) << "a retry turns health back";
  EXPECT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "5"}).exit_code, 0);
  EXPECT_EQ(StateOf(rest, id), "CANCELLED");

  ::kill(c, SIGKILL);
  children.Stop(c);
  ::unlink((dir + "/endpoints.json").c_str());
  c = children.Start(args, dir + "/coordinator-2.log");
  const int rest_again = EndpointPort(dir + "/endpoints.json", "rest");
  ASSERT_NE(rest_again, 0) << ReadFile(dir + "/coordinator-2.log");
  EXPECT_EQ(StateOf(rest_again, id), "CANCELLED") << "the cancel was kept and written";
}

}  // namespace
}  // namespace gradsync::testing

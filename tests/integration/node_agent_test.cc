// The node agent with real processes: `gradsync-worker --workers 2` runs two workers that
// register under their own names and train one job together as its two ranks; a worker killed
// with SIGKILL is started again and registers again; SIGTERM to the agent leaves no worker
// running. And `--gpus` where no GPU is visible fails at once, naming the flag.
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli_harness.h"
#include "gradsync/device/device.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

// Worker name prefix -> pids it registered with, in order, from the coordinator's log lines
// "worker <name>-<id> registered from <host> pid <pid> device ...".
std::map<std::string, std::vector<pid_t>> Registrations(const std::string& coordinator_log) {
  static const std::regex line(R"(worker (\S+)-[0-9a-f]{5} registered from \S+ pid (\d+) )");
  std::map<std::string, std::vector<pid_t>> out;
  const std::string text = ReadFile(coordinator_log);
  for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it) {
    pid_t pid = 0;
    if (absl::SimpleAtoi((*it)[2].str(), &pid)) out[(*it)[1].str()].push_back(pid);
  }
  return out;
}

// Polls the coordinator's log until `pred` holds on its registrations or 60 s pass.
std::map<std::string, std::vector<pid_t>> AwaitRegistrations(
    const std::string& coordinator_log,
    const std::function<bool(const std::map<std::string, std::vector<pid_t>>&)>& pred) {
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  std::map<std::string, std::vector<pid_t>> seen;
  while (absl::Now() < deadline) {
    seen = Registrations(coordinator_log);
    if (pred(seen)) return seen;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return seen;
}

// The parent of `pid` from /proc/<pid>/stat, or -1 when it is gone.
pid_t ParentOf(pid_t pid) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::vector<std::string> fields = absl::StrSplit(stat.substr(paren + 2), ' ');
  pid_t parent = -1;
  return fields.size() > 1 && absl::SimpleAtoi(fields[1], &parent) ? parent : -1;
}

bool Gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

TEST(NodeAgent, RunsTwoWorkersThatTrainAJobAndRestartsOneKilled) {
  const std::string dir = MakeTempDir();
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  const std::string coordinator_log = dir + "/coordinator.log", agent_log = dir + "/agent.log";
  Children children;
  children.Start(CoordinatorArgs(address, dir, {"--heartbeat_interval_ms=300", "--lease_timeout_ms=3000"}),
                 coordinator_log);
  const pid_t agent = children.Start(
      WorkerArgs(address, {"--workers=2", "--name=node", "--endpoints_file=" + dir + "/w.json"}), agent_log);

  // Both register, each under its own name, as children of the agent.
  auto registered = AwaitRegistrations(coordinator_log, [](const auto& r) { return r.size() == 2; });
  ASSERT_EQ(registered.size(), 2u) << ReadFile(coordinator_log) << ReadFile(agent_log);
  ASSERT_EQ(registered.count("node-cpu0"), 1u) << ReadFile(coordinator_log);
  ASSERT_EQ(registered.count("node-cpu1"), 1u) << ReadFile(coordinator_log);
  const pid_t first = registered["node-cpu0"][0], second = registered["node-cpu1"][0];
  EXPECT_NE(first, second);
  EXPECT_EQ(ParentOf(first), agent);
  EXPECT_EQ(ParentOf(second), agent);
  // Each serves on its own ports (port 0 stays "a free port" for each) and says so in its file.
  EXPECT_FALSE(WaitForEndpoints(dir + "/w-cpu0.json").empty()) << ReadFile(agent_log);
  EXPECT_FALSE(WaitForEndpoints(dir + "/w-cpu1.json").empty()) << ReadFile(agent_log);

  // A job of two ranks runs on the two of them.
  const CommandResult submit = RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address, "--set",
                                          "training.worldSize=2", "--set", "training.maxSteps=20"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string job = submit.out.substr(0, submit.out.find('\n'));  // jobs/<id>
  const std::string done = WaitForJob(address, job, absl::Seconds(120), [](const std::string& out) {
    return absl::StrContains(out, "\"SUCCEEDED\"") || absl::StrContains(out, "\"FAILED\"");
  });
  EXPECT_TRUE(absl::StrContains(done, "\"SUCCEEDED\"")) << done << ReadFile(agent_log);
  const std::string log = ReadFile(agent_log);
  const std::string id = job.substr(job.find('/') + 1);
  EXPECT_TRUE(absl::StrContains(log, "assigned rank 0/2 of job " + id + " ")) << log;
  EXPECT_TRUE(absl::StrContains(log, "assigned rank 1/2 of job " + id + " ")) << log;

  // One worker killed: the agent starts it again, and it registers again under its name.
  ASSERT_EQ(::kill(second, SIGKILL), 0);
  registered = AwaitRegistrations(
      coordinator_log, [](const auto& r) { return r.count("node-cpu1") > 0 && r.at("node-cpu1").size() == 2; });
  ASSERT_EQ(registered["node-cpu1"].size(), 2u) << ReadFile(agent_log);
  const pid_t restarted = registered["node-cpu1"][1];
  EXPECT_NE(restarted, second);
  EXPECT_EQ(ParentOf(restarted), agent);
  EXPECT_EQ(registered["node-cpu0"], std::vector<pid_t>{first}) << "the other worker ran on";
  EXPECT_TRUE(
      absl::StrContains(ReadFile(agent_log), "node-cpu1 (pid " + std::to_string(second) + ") killed by signal 9"))
      << ReadFile(agent_log);

  // SIGTERM to the agent: it stops its workers, waits for them and exits 0; none is left.
  ASSERT_EQ(::kill(agent, SIGTERM), 0);
  int status = 0;
  pid_t reaped = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(45);
  while ((reaped = ::waitpid(agent, &status, WNOHANG)) == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_EQ(reaped, agent) << "the agent did not exit within 45 s of SIGTERM\n" << ReadFile(agent_log);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "\n" << ReadFile(agent_log);
  EXPECT_TRUE(Gone(first)) << "worker pid " << first << " outlived the agent";
  EXPECT_TRUE(Gone(restarted)) << "worker pid " << restarted << " outlived the agent";
  EXPECT_TRUE(absl::StrContains(ReadFile(agent_log), "] stopped 2 workers in ")) << ReadFile(agent_log);
}

TEST(NodeAgent, GpusWithoutAGpuFailsNamingTheFlag) {
  if (!device::ListGpus().empty()) GTEST_SKIP() << "a GPU is visible here; the check is for machines without one";
  const absl::Time start = absl::Now();
  const CommandResult r = RunBinary({"gradsync-worker", "--gpus=all", "--coordinator=127.0.0.1:1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "--gpus all: no GPU is visible on this machine")) << r.err;
  EXPECT_LT(absl::Now() - start, absl::Seconds(20)) << "it fails at once, without waiting for a coordinator";
}

TEST(NodeAgent, RefusesBadSelectionsNamingTheFlag) {
  const struct {
    std::vector<std::string> flags;
    std::string message;
  } cases[] = {
      {{"--gpus=0,x"}, "--gpus 0,x: \"x\" is not a GPU ordinal"},
      {{"--gpus=0"}, "--gpus 0: a count must be 1 or more"},
      {{"--gpus=1", "--workers=2"}, "--gpus and --workers: give one"},
      {{"--workers=-1"}, "--workers: expected 1 or more"},
      {{"--workers=2", "--device=cuda:0"}, "--device cuda:0: the node agent gives each worker its device"},
      {{"--workers=2", "--cpus=0-x"}, "--cpus: "},
      {{"--workers=2", "--metrics_listen=127.0.0.1:65535"}, "--metrics_listen \"127.0.0.1:65535\": worker 1 would"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"gradsync-worker", "--coordinator=127.0.0.1:1"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const CommandResult r = RunBinary(args);
    EXPECT_EQ(r.exit_code, 2) << c.flags[0] << ": " << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, c.message)) << c.flags[0] << ": " << r.err;
  }
}

// A worker that refuses its flags (status 2) would refuse them at every restart: the agent stops
// and exits 2 instead of restarting it for ever.
TEST(NodeAgent, AWorkerThatRefusesItsFlagsEndsTheAgent) {
  const absl::Time start = absl::Now();
  const CommandResult r =
      RunBinary({"gradsync-worker", "--workers=2", "--coordinator=127.0.0.1:1", "--health_listen=127.0.0.1:0",
                 "--metrics_listen=127.0.0.1:0", "--abort_grace_ms=-1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "--abort_grace_ms must be 0 or more")) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "refused its flags")) << r.err;
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
}

}  // namespace
}  // namespace gradsync::testing

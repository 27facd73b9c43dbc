// Hang diagnosis with real processes: rank 1 stalls at the start of a step (an injected fault;
// its heartbeats go on), rank 0 waits in that step's first gradient all-reduce, and within a few
// heartbeats the job's events name rank 1 as the one behind and the bucket rank 0 waits in; when
// rank 1 goes on, the stall clears and the job finishes. A rank stuck where the abort cannot reach
// it (the drill's sleep, standing for a hung call) exits within its grace, saying where it was.
#include <sys/wait.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

TEST(Stall, TheEventsNameTheRankBehindAndTheBucketTheOthersWaitIn) {
  const std::string dir = MakeTempDir();
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  Children children;
  children.Start(CoordinatorArgs(address, dir, {"--heartbeat_interval_ms=300", "--stall_timeout_ms=2000"}),
                 dir + "/coordinator.log");
  for (const char* name : {"a", "b"}) {
    // Both carry the drill; it fires on whichever holds rank 1.
    children.Start(WorkerArgs(address, {absl::StrCat("--name=", name), "--inject_stall=rank=1,step=30,seconds=6"}),
                   absl::StrCat(dir, "/", name, ".log"));
  }
  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
  CommandResult submit =
      RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address, "--set", "training.worldSize=2",
                 "--set", "training.epochs=0", "--set", "training.maxSteps=1000"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string job = submit.out.substr(0, submit.out.find('\n'));

  const std::string done = WaitForJob(address, job, absl::Seconds(90), [](const std::string& out) {
    return out.find("\"SUCCEEDED\"") != std::string::npos || out.find("\"FAILED\"") != std::string::npos;
  });
  EXPECT_NE(done.find("\"SUCCEEDED\""), std::string::npos) << done;
  const size_t stalled = done.find("\"Stalled\"");
  ASSERT_NE(stalled, std::string::npos) << done;
  const std::string event = done.substr(stalled, done.find('}', stalled) - stalled);
  EXPECT_NE(event.find("is behind, at step 30, computing step 30: 0 of"), std::string::npos) << event;
  EXPECT_NE(event.find("rank 1 (worker "), std::string::npos) << event;
  EXPECT_NE(event.find("rank 0 waits: waiting in collective #"), std::string::npos) << event;
  EXPECT_NE(event.find("all-reduce of gradient bucket 1 of"), std::string::npos) << event;
  EXPECT_NE(done.find("\"StallCleared\"", stalled), std::string::npos) << done;
}

// The worker whose log says `text` first, among `logs`; -1 if none within `timeout`.
int FirstLogSaying(const std::vector<std::string>& logs, const std::string& text, absl::Duration timeout) {
  for (const absl::Time deadline = absl::Now() + timeout; absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(100))) {
    for (size_t i = 0; i < logs.size(); ++i) {
      if (ReadFile(logs[i]).find(text) != std::string::npos) return static_cast<int>(i);
    }
  }
  return -1;
}

TEST(Stall, ARankTheAbortCannotReachExitsWithinItsGraceSayingWhereItIs) {
  const std::string dir = MakeTempDir();
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  Children children;
  children.Start(CoordinatorArgs(address, dir, {"--heartbeat_interval_ms=300", "--lease_timeout_ms=3000"}),
                 dir + "/coordinator.log");
  std::vector<pid_t> pids;
  std::vector<std::string> logs;
  for (const char* name : {"a", "b"}) {
    logs.push_back(absl::StrCat(dir, "/", name, ".log"));
    // Rank 1 sleeps at step 5 far longer than the test: only the watchdog can end it.
    pids.push_back(children.Start(WorkerArgs(address, {absl::StrCat("--name=", name), "--abort_grace_ms=1500",
                                                       "--inject_stall=rank=1,step=5,seconds=3600"}),
                                  logs.back()));
  }
  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
  CommandResult submit =
      RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address, "--set", "training.worldSize=2",
                 "--set", "training.epochs=0", "--set", "training.maxSteps=1000"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const int stalled = FirstLogSaying(logs, "injected fault: stalling step 5", absl::Seconds(60));
  ASSERT_GE(stalled, 0) << "no rank reached the drill";
  // Rank 0's worker leaves; the coordinator aborts the generation on the stalled rank.
  children.Stop(pids[1 - stalled]);

  int status = 0;
  pid_t reaped = 0;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(60); reaped == 0 && absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(100))) {
    reaped = ::waitpid(pids[stalled], &status, WNOHANG);
  }
  const std::string log = ReadFile(logs[stalled]);
  ASSERT_EQ(reaped, pids[stalled]) << "the stalled worker outlived the abort by a minute:\n" << log;
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 70) << log;
  EXPECT_NE(log.find("coordinator aborts the generation"), std::string::npos) << log;
  EXPECT_NE(log.find("the generation has not stopped"), std::string::npos) << log;
  EXPECT_NE(log.find("rank 1, computing step 5"), std::string::npos) << log;
}

}  // namespace
}  // namespace gradsync::testing

// Hang diagnosis with real processes: rank 1 stalls at the start of a step (an injected fault;
// its heartbeats go on), rank 0 waits in that step's first gradient all-reduce, and within a few
// heartbeats the job's events name rank 1 as the one behind and the bucket rank 0 waits in; when
// rank 1 goes on, the stall clears and the job finishes.
#include "absl/strings/str_cat.h"
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

}  // namespace
}  // namespace gradsync::testing

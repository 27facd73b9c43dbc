// A job can fail; a worker never dies of one. Each test here once killed or hung every worker its
// job reached: the job was retried on the next worker (a dead worker is retryable) until none was
// left. Now the job ends FAILED naming the cause, and the same worker processes take the next job.
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

bool Ended(const std::string& out) {
  return out.find("\"SUCCEEDED\"") != std::string::npos || out.find("\"FAILED\"") != std::string::npos;
}

// Submits examples/jobs/`example` with `overrides`; returns the job id ("" after a test failure).
std::string Submit(const std::string& address, const std::string& example, const std::vector<std::string>& overrides) {
  std::vector<std::string> args = {"gradsync", "submit", ExamplePath(example), "--address", address};
  for (const std::string& o : overrides) args.insert(args.end(), {"--set", o});
  CommandResult r = RunBinary(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out.substr(0, r.out.find('\n'));
}

// Waits for the job to end and returns its final `gradsync get -o json`.
std::string Outcome(const std::string& address, const std::string& job) {
  return WaitForJob(address, job, absl::Seconds(60), Ended);
}

// Waits until the file at `path` holds `text` (the test fails after 20 s).
void WaitForLog(const std::string& path, const std::string& text) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (ReadFile(path).find(text) == std::string::npos) {
    if (absl::Now() > deadline) {
      ADD_FAILURE() << path << " never said \"" << text << "\":\n" << ReadFile(path);
      return;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

const std::vector<std::string> kShortMlp = {"training.worldSize=1", "training.epochs=0", "training.maxSteps=20"};

// A directory and a fifo in the data root pass every check at submission (they are inside the
// root); reading the directory threw std::ios_base::failure out of the worker, and opening the
// fifo waited for a writer for ever.
TEST(JobFailure, DataThatIsNoRegularFileFailsTheJobAndTheWorkerRunsTheNext) {
  const std::string dir = MakeTempDir();
  const std::string data = dir + "/data";
  std::filesystem::create_directories(data + "/corpus");
  std::ofstream(data + "/corpus/a.txt") << std::string(4096, 'a');
  ASSERT_EQ(::mkfifo((data + "/pipe").c_str(), 0600), 0);
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  Children children;
  children.Start(CoordinatorArgs(address, dir, {"--data_root=" + data}), dir + "/coordinator.log");
  const pid_t worker = children.Start(WorkerArgs(address), dir + "/worker.log");
  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);

  const std::vector<std::pair<std::string, std::string>> cases = {
      {data + "/corpus", data + "/corpus: is a directory, not a data file"},
      {data + "/pipe", data + "/pipe: is not a regular file"}};
  for (const auto& [path, cause] : cases) {
    const std::string text = "data.text.paths=[\"" + path + "\"]";
    const std::string job = Submit(address, "demo.yaml", {text, "training.worldSize=1", "training.maxSteps=5"});
    const std::string done = Outcome(address, job);
    EXPECT_NE(done.find("\"FAILED\""), std::string::npos) << done;
    EXPECT_NE(done.find("rank 0 on worker "), std::string::npos) << done;
    EXPECT_NE(done.find(cause), std::string::npos) << done << ReadFile(dir + "/worker.log");
    ASSERT_TRUE(ProcessAlive(worker)) << ReadFile(dir + "/worker.log");
  }
  const std::string next = Outcome(address, Submit(address, "mlp.yaml", kShortMlp));
  EXPECT_NE(next.find("\"SUCCEEDED\""), std::string::npos) << next << ReadFile(dir + "/worker.log");
}

// `hiddenDims: [65536, 65536]` is 4.3G parameters: refused at submission by the coordinator's
// model budget. Past a budget raised beyond what the workers hold (here their address space is
// 8 GiB), building the model throws std::bad_alloc, which ended each worker in turn. Now each rank
// fails its setup with the cause; after two workers the job is FAILED, and both go on.
TEST(JobFailure, AModelTooLargeForTheWorkersIsRefusedOrFailsOnTwoWorkersAndNotTheWorkers) {
  const std::string dir = MakeTempDir();
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  Children children;
  const pid_t coordinator = children.Start(CoordinatorArgs(address, dir), dir + "/coordinator.log");
  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
  CommandResult refused = RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address, "--set",
                                     "model.mlp.hiddenDims=[65536, 65536]"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("model.mlp.hiddenDims: the model's 4297850890 parameters take 64.0 GiB"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("over the 16.0 GiB"), std::string::npos) << refused.err;
  children.Stop(coordinator);

  children.Start(CoordinatorArgs(address, dir, {"--max_model_bytes=1000000000000000"}), dir + "/coordinator-2.log");
  std::vector<pid_t> workers;
  absl::Cleanup stop = [&] {
    for (pid_t w : workers) children.Stop(w);
  };
  for (const char* name : {"a", "b"}) {
    std::vector<std::string> args = {"-c", "ulimit -v 8388608 && exec \"$0\" \"$@\"",
                                     absl::StrCat(GRADSYNC_BIN_DIR, "/gradsync-worker")};
    std::vector<std::string> worker = WorkerArgs(address, {absl::StrCat("--name=", name)});
    args.insert(args.end(), worker.begin() + 1, worker.end());
    workers.push_back(StartBinaryAt("/bin/sh", args, absl::StrCat(dir, "/", name, ".log")));
  }
  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
  // A job on both workers first: both are registered and work under the limit.
  std::vector<std::string> both = kShortMlp;
  both[0] = "training.worldSize=2";
  const std::string first = Outcome(address, Submit(address, "mlp.yaml", both));
  ASSERT_NE(first.find("\"SUCCEEDED\""), std::string::npos) << first << ReadFile(dir + "/a.log");

  std::vector<std::string> huge = kShortMlp;
  huge.push_back("model.mlp.hiddenDims=[65536, 65536]");
  const std::string done = Outcome(address, Submit(address, "mlp.yaml", huge));
  EXPECT_NE(done.find("\"FAILED\""), std::string::npos) << done;
  EXPECT_NE(done.find("failed during setup: RESOURCE_EXHAUSTED: out of memory"), std::string::npos) << done;
  EXPECT_NE(done.find("failed during setup on 2 workers: not retried"), std::string::npos) << done;
  for (pid_t w : workers) ASSERT_TRUE(ProcessAlive(w)) << ReadFile(dir + "/a.log") << ReadFile(dir + "/b.log");

  const std::string next = Outcome(address, Submit(address, "mlp.yaml", both));
  EXPECT_NE(next.find("\"SUCCEEDED\""), std::string::npos) << next << ReadFile(dir + "/a.log");
}

// An assignment the worker cannot parse (here the operator's artifact root is not UTF-8, and so is
// every weights path in the coordinator's assignments) used to fail gRPC's Read while the stream
// stayed open: the worker waited for ever, heartbeating, and the job stayed RUNNING. Now the rank
// fails with the cause, and the worker takes the next assignment.
TEST(JobFailure, AnAssignmentThatDoesNotParseFailsItsRankAndTheWorkerTakesTheNext) {
  const std::string dir = MakeTempDir();
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  Children children;
  children.Start(CoordinatorArgs(address, dir, {"--artifact_root=" + dir + "/artifacts-\xff"}),
                 dir + "/coordinator.log");
  const pid_t worker = children.Start(WorkerArgs(address), dir + "/worker.log");
  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
  for (int i = 0; i < 2; ++i) {
    const std::string done = Outcome(address, Submit(address, "mlp.yaml", kShortMlp));
    EXPECT_NE(done.find("\"FAILED\""), std::string::npos) << done << ReadFile(dir + "/worker.log");
    EXPECT_NE(done.find("failed during setup: INVALID_ARGUMENT: assignment: the coordinator's message"),
              std::string::npos)
        << done;
    EXPECT_NE(done.find("does not parse as a gradsync.v1.Assignment"), std::string::npos) << done;
    ASSERT_TRUE(ProcessAlive(worker));
  }
}

// The assignment stream breaks under a worker that is alive: frozen past its lease, it is
// declared lost and the coordinator ends its stream. Woken, it registers again, watches a new
// stream and runs the next job.
TEST(JobFailure, AWorkerWhoseAssignmentStreamBreaksReconnectsAndRunsTheNextJob) {
  const std::string dir = MakeTempDir();
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  Children children;
  children.Start(CoordinatorArgs(address, dir, {"--heartbeat_interval_ms=200", "--lease_timeout_ms=1000"}),
                 dir + "/coordinator.log");
  const pid_t worker = children.Start(WorkerArgs(address), dir + "/worker.log");
  ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
  WaitForLog(dir + "/worker.log", "registered with");
  ASSERT_EQ(::kill(worker, SIGSTOP), 0);
  WaitForLog(dir + "/coordinator.log", "lost: no heartbeat");
  ASSERT_EQ(::kill(worker, SIGCONT), 0);

  const std::string done = Outcome(address, Submit(address, "mlp.yaml", kShortMlp));
  EXPECT_NE(done.find("\"SUCCEEDED\""), std::string::npos) << done << ReadFile(dir + "/worker.log");
  const std::string log = ReadFile(dir + "/worker.log");
  EXPECT_NE(log.find("reconnecting"), std::string::npos) << log;
  EXPECT_NE(log.find("registered with", log.find("reconnecting")), std::string::npos) << log;
}

}  // namespace
}  // namespace gradsync::testing

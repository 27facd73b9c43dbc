// Failure recovery with real processes: a worker killed mid-run is started again by the local
// cluster's supervisor, the coordinator restarts the job from the survivor's memory
// (training.recovery "live") or from its last committed checkpoint ("checkpoint"), and either way
// the job ends with parameters bitwise identical to an uninterrupted run.
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gradsync/cluster/local_cluster_file.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

// Wide enough layers that the run outlasts the polling of a loaded machine: the kill must land
// mid-run.
const std::vector<std::string> kJob = {"--set", "training.maxSteps=2400",    "--set", "training.epochs=0",
                                       "--set", "checkpoint.everySteps=200", "--set", "training.logEvery=20",
                                       "--set", "model.mlp.hiddenDims=[384,384]"};

// The job's progress step on the local cluster in `state_dir`, or -1.
int64_t CurrentStep(const std::string& state_dir, const std::string& job) {
  return ProgressStep(RunBinary({"gradsync", "get", job, "-o", "json", "--state-dir", state_dir}).out);
}

// The processes of one test directory and address: coordinators writing to dir/artifacts with a
// 1.5 s lease (a lost worker is seen soon), named workers, and a one-rank mlp job of wide layers
// (slow enough to be stopped mid-run). Each logs to dir/<name>.log.
struct OneRankRun {
  std::string dir = MakeTempDir();
  std::string address = absl::StrCat("127.0.0.1:", FreePort());

  pid_t Coordinator(const std::vector<std::string>& extra, const std::string& log = "coordinator.log") const {
    std::vector<std::string> flags = {"--heartbeat_interval_ms=300", "--lease_timeout_ms=1500"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    return StartBinary(CoordinatorArgs(address, dir, flags), dir + "/" + log);
  }
  pid_t Worker(const std::string& name) const {
    return StartBinary(WorkerArgs(address, {"--name=" + name}), dir + "/" + name + ".log");
  }
  // Once the coordinator serves: submits `steps` steps with a checkpoint every `every` (0: none of
  // its own) and waits until the job reached step `at`. Returns "jobs/<id>", or "" when refused.
  std::string SubmitAndReach(int steps, int every, int64_t at) const {
    EXPECT_EQ(RunBinary({"gradsync", "healthcheck", address, "--timeout", "20"}).exit_code, 0);
    CommandResult submit = RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address, "--set",
                                      "training.worldSize=1", "--set", "model.mlp.hiddenDims=[512,512]", "--set",
                                      "training.epochs=0", "--set", absl::StrCat("training.maxSteps=", steps), "--set",
                                      absl::StrCat("checkpoint.everySteps=", every), "--set", "training.logEvery=10"});
    EXPECT_EQ(submit.exit_code, 0) << submit.err;
    if (submit.exit_code != 0) return "";
    const std::string job = submit.out.substr(0, submit.out.find('\n'));
    WaitForJob(address, job, absl::Seconds(60), [at](const std::string& out) { return ProgressStep(out) >= at; });
    return job;
  }
};

class KilledWorker : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(Recovery, KilledWorker, ::testing::Values("live", "checkpoint"));

TEST_P(KilledWorker, IsReplacedAndTheJobEndsBitwiseIdenticalToAnUninterruptedRun) {
  // The reference: the same job, uninterrupted.
  std::vector<std::string> run = {"gradsync",    "run",        ExamplePath("mlp.yaml"), "-o", "json",
                                  "--state-dir", MakeTempDir()};
  run.insert(run.end(), kJob.begin(), kJob.end());
  CommandResult reference = RunBinary(run);
  ASSERT_EQ(reference.exit_code, 0) << reference.out << reference.err;
  const std::string expected = ParseFlatJson(reference.out)["paramDigest"];
  ASSERT_FALSE(expected.empty());

  const std::string dir = MakeTempDir();
  CommandResult up = RunBinary({"gradsync", "local", "up", "--workers", "2", "--state-dir", dir});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  std::vector<std::string> submit = {"gradsync",    "submit", ExamplePath("mlp.yaml"),
                                     "--state-dir", dir,      "--set",
                                     "training.recovery=" + GetParam()};
  submit.insert(submit.end(), kJob.begin(), kJob.end());
  CommandResult submitted = RunBinary(submit);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job = submitted.out.substr(0, submitted.out.find('\n'));

  // Past the second checkpoint, kill worker 0 without warning.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (CurrentStep(dir, job) < 500 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(100));
  absl::StatusOr<cluster::LocalClusterFile> cluster = cluster::ReadLocalClusterFile(dir);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::vector<pid_t> pids = cluster->pids;
  ASSERT_EQ(pids.size(), 4u);
  ASSERT_EQ(::kill(pids[2], SIGKILL), 0);

  CommandResult watched = RunBinary({"gradsync", "watch", job, "--state-dir", dir, "-o", "json"});
  EXPECT_EQ(watched.exit_code, 0) << watched.out << watched.err;
  EXPECT_EQ(ParseFlatJson(watched.out)["state"], "SUCCEEDED") << watched.out;
  EXPECT_EQ(ParseFlatJson(watched.out)["paramDigest"], expected) << "recovery changed the result";
  EXPECT_EQ(ParseFlatJson(watched.out)["globalStep"], "2400");

  CommandResult got = RunBinary({"gradsync", "get", job, "-o", "json", "--state-dir", dir});
  EXPECT_NE(got.out.find("\"restarts\": 1"), std::string::npos) << got.out;
  EXPECT_NE(got.out.find(GetParam() == "live" ? "resuming live at step" : "resuming from the checkpoint at step"),
            std::string::npos)
      << got.out;
  EXPECT_NE(got.out.find("CheckpointCommitted"), std::string::npos) << got.out;
  EXPECT_EQ(RunBinary({"gradsync", "local", "down", "--state-dir", dir}).exit_code, 0);
}

// A checkpoint damaged on disk: the worker is frozen (SIGSTOP) so it writes nothing more, the
// newest checkpoint's part is truncated, the worker is killed, and a new worker takes over. The
// coordinator detects the damage, says so in an event, and resumes from the previous checkpoint.
TEST(Recovery, ATruncatedCheckpointIsDetectedAndThePreviousOneIsUsed) {
  const OneRankRun run;
  const std::string &dir = run.dir, &address = run.address;
  const pid_t coordinator = run.Coordinator({});
  const pid_t first = run.Worker("first");
  const std::string job = run.SubmitAndReach(3000, 100, 250);
  ASSERT_FALSE(job.empty());

  ASSERT_EQ(::kill(first, SIGSTOP), 0);
  // The newest committed checkpoint: the highest step directory with a manifest.
  std::string newest;
  const std::string id = job.substr(job.find('/') + 1);  // "jobs/{id}"
  for (const auto& e : std::filesystem::directory_iterator(dir + "/artifacts/" + id + "/checkpoints")) {
    if (std::filesystem::exists(e.path() / "MANIFEST.json") && e.path().string() > newest) newest = e.path().string();
  }
  ASSERT_FALSE(newest.empty());
  const std::string part = newest + "/rank-00000.bin";
  std::filesystem::resize_file(part, std::filesystem::file_size(part) / 2);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ::waitpid(first, nullptr, 0);
  const pid_t second = run.Worker("second");

  const std::string done = WaitForJob(address, job, absl::Seconds(120), [](const std::string& out) {
    return out.find("\"SUCCEEDED\"") != std::string::npos || out.find("\"FAILED\"") != std::string::npos;
  });
  EXPECT_NE(done.find("\"SUCCEEDED\""), std::string::npos) << done << ReadFile(dir + "/second.log");
  const size_t corrupt = done.find("\"CheckpointCorrupt\"");
  ASSERT_NE(corrupt, std::string::npos) << done;
  const std::string step = newest.substr(newest.rfind('-') + 1);
  const int64_t bad = std::stoll(step);
  EXPECT_NE(done.find(absl::StrCat("checkpoint at step ", bad, " failed verification")), std::string::npos) << done;
  EXPECT_NE(done.find(absl::StrCat("resuming from the checkpoint at step ", bad - 100)), std::string::npos) << done;
  EXPECT_TRUE(std::filesystem::exists(newest + ".corrupt-g2/rank-00000.bin")) << "set aside, kept for inspection";

  ::kill(second, SIGTERM);
  ::kill(coordinator, SIGTERM);
  ::waitpid(second, nullptr, 0);
  ::waitpid(coordinator, nullptr, 0);
}

// A preemption (scancel, a pod's deletion): SIGTERM to the only worker of a job that never
// checkpoints on its own. The worker checkpoints at its next step boundary before it stops, so
// the next worker resumes from the step it was stopped at instead of starting over.
TEST(Recovery, AWorkerStoppedBySigtermCheckpointsBeforeItStops) {
  const OneRankRun run;
  const std::string &dir = run.dir, &address = run.address;
  const pid_t coordinator = run.Coordinator({});
  const pid_t first = run.Worker("first");
  const std::string job = run.SubmitAndReach(1200, 0, 100);
  ASSERT_FALSE(job.empty());

  ASSERT_EQ(::kill(first, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(first, &status, 0), first);
  EXPECT_TRUE(WIFEXITED(status)) << "the worker ended by a signal, not by itself";
  const std::string first_log = ReadFile(dir + "/first.log");
  EXPECT_NE(first_log.find("the checkpoint is written and reported"), std::string::npos) << first_log;
  const pid_t second = run.Worker("second");

  const std::string done = WaitForJob(address, job, absl::Seconds(120), [](const std::string& out) {
    return out.find("\"SUCCEEDED\"") != std::string::npos || out.find("\"FAILED\"") != std::string::npos;
  });
  EXPECT_NE(done.find("\"SUCCEEDED\""), std::string::npos) << done << ReadFile(dir + "/second.log");
  const size_t resumed = done.find("resuming from the checkpoint at step ");
  ASSERT_NE(resumed, std::string::npos) << "the second worker started over:\n" << done;
  int64_t step = 0;
  const std::string digits = done.substr(resumed + 37, done.find_first_not_of("0123456789", resumed + 37) - resumed - 37);
  ASSERT_TRUE(absl::SimpleAtoi(digits, &step)) << done;
  EXPECT_GE(step, 100) << "resumed from before the step the worker was stopped at";

  ::kill(second, SIGTERM);
  ::kill(coordinator, SIGTERM);
  ::waitpid(second, nullptr, 0);
  ::waitpid(coordinator, nullptr, 0);
}

// A preemption of the whole service (scancel of a Slurm run): the coordinator and the worker get
// SIGTERM at once. The worker's checkpoint commits before the coordinator stops, which notes the
// job as preempted; the next coordinator on the same state resumes it from that checkpoint without
// counting a restart, whether it abandons the generation at once (--adopt_grace_ms=0, as a Slurm
// run's coordinator does) or after waiting for its ranks in vain.
TEST(Recovery, APreemptedJobResumesFromItsCheckpointWithoutCountingARestart) {
  for (const std::string grace : {"--adopt_grace_ms=0", "--adopt_grace_ms=1000"}) {
    SCOPED_TRACE(grace);
    const OneRankRun run;
    const std::string &dir = run.dir, &address = run.address;
    auto coordinator = [&](const std::string& log) {
      return run.Coordinator({"--state_dir=" + dir + "/state", grace}, log);
    };
    const pid_t first_coordinator = coordinator("coordinator-1.log");
    const pid_t first = run.Worker("first");
    const std::string job = run.SubmitAndReach(1200, 0, 100);
    ASSERT_FALSE(job.empty());

    ASSERT_EQ(::kill(first_coordinator, SIGTERM), 0);
    ASSERT_EQ(::kill(first, SIGTERM), 0);
    ::waitpid(first, nullptr, 0);
    ::waitpid(first_coordinator, nullptr, 0);
    const std::string stopped = ReadFile(dir + "/coordinator-1.log");
    EXPECT_NE(stopped.find("(1 running jobs checkpointed)"), std::string::npos) << stopped;

    const pid_t second_coordinator = coordinator("coordinator-2.log");
    const pid_t second = run.Worker("second");
    const std::string done = WaitForJob(address, job, absl::Seconds(120), [](const std::string& out) {
      return out.find("\"SUCCEEDED\"") != std::string::npos || out.find("\"FAILED\"") != std::string::npos;
    });
    EXPECT_NE(done.find("\"SUCCEEDED\""), std::string::npos) << done;
    EXPECT_NE(done.find("\"Preempted\""), std::string::npos) << done;
    EXPECT_NE(done.find("(not counted as a restart)"), std::string::npos) << done;
    const bool counted = done.find("\"restarts\": ") != std::string::npos && done.find("\"restarts\": 0") == std::string::npos;
    EXPECT_FALSE(counted) << "a preemption was counted as a restart:\n" << done;
    EXPECT_NE(done.find("resuming from the checkpoint at step "), std::string::npos) << done;

    ::kill(second, SIGTERM);
    ::kill(second_coordinator, SIGTERM);
    ::waitpid(second, nullptr, 0);
    ::waitpid(second_coordinator, nullptr, 0);
  }
}

}  // namespace
}  // namespace gradsync::testing

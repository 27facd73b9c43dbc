// End to end with real processes on loopback: the gradsync CLI starts a coordinator and workers,
// the job trains over Gloo, and the outcomes are read back from the CLI's JSON and weights file.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gradsync/ckpt/weights_file.h"
#include "gradsync/cluster/local_cluster.h"
#include "gradsync/cluster/local_cluster_file.h"
#include "gradsync/core/child_process.h"
#include "gradsync/core/cpu_set.h"
#include "gradsync/core/digest.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

struct RunOutcome {
  CommandResult cmd;
  std::map<std::string, std::string> summary;
  std::string state_dir;
};

// `gradsync run` of mlp.yaml, short, with extra arguments.
RunOutcome RunMlp(std::vector<std::string> extra) {
  RunOutcome o;
  o.state_dir = MakeTempDir();
  std::vector<std::string> args = {"gradsync",
                                   "run",
                                   ExamplePath("mlp.yaml"),
                                   "-o",
                                   "json",
                                   "--state-dir",
                                   o.state_dir,
                                   "--set",
                                   "training.maxSteps=40",
                                   "--set",
                                   "training.epochs=0"};
  args.insert(args.end(), extra.begin(), extra.end());
  o.cmd = RunBinary(args);
  o.summary = ParseFlatJson(o.cmd.out);
  return o;
}

double Num(const RunOutcome& o, const std::string& key) {
  double v = NAN;
  auto it = o.summary.find(key);
  if (it != o.summary.end()) (void)absl::SimpleAtod(it->second, &v);
  return v;
}

std::string Field(const RunOutcome& o, const std::string& key) {
  auto it = o.summary.find(key);
  return it == o.summary.end() ? "" : it->second;
}

std::string Diagnose(const RunOutcome& o) {
  return absl::StrCat("exit ", o.cmd.exit_code, "\nstdout:\n", o.cmd.out, "\nstderr:\n", o.cmd.err);
}

TEST(LocalCluster, TwoWorkersTrainTogetherAndAgree) {
  RunOutcome o = RunMlp({});
  ASSERT_EQ(o.cmd.exit_code, 0) << Diagnose(o);
  EXPECT_EQ(Field(o, "state"), "SUCCEEDED");
  EXPECT_EQ(Field(o, "name"), "mlp");
  EXPECT_EQ(Num(o, "globalStep"), 40);
  EXPECT_EQ(Num(o, "worldSize"), 2);
  EXPECT_GT(Num(o, "samplesPerSecond"), 0);
  EXPECT_GT(Num(o, "tokensPerSecond"), 0);
  EXPECT_LT(Num(o, "finalLoss"), 0.8 * Num(o, "initialLoss")) << "the loss did not fall: " << o.cmd.out;

  // The weights rank 0 wrote are the parameters every rank agreed on.
  auto weights = ckpt::LoadWeights(Field(o, "weightsPath"));
  ASSERT_TRUE(weights.ok()) << weights.status();
  EXPECT_EQ(DigestString(std::as_bytes(std::span<const float>(weights->values))), Field(o, "paramDigest"));
}

TEST(LocalCluster, SameJobTwiceGivesTheSameDigest) {
  RunOutcome a = RunMlp({});
  RunOutcome b = RunMlp({});
  ASSERT_EQ(a.cmd.exit_code, 0) << Diagnose(a);
  ASSERT_EQ(b.cmd.exit_code, 0) << Diagnose(b);
  EXPECT_EQ(Field(a, "paramDigest"), Field(b, "paramDigest"));
  EXPECT_FALSE(Field(a, "paramDigest").empty());
  RunOutcome other_seed = RunMlp({"--set", "training.seed=43"});
  ASSERT_EQ(other_seed.cmd.exit_code, 0) << Diagnose(other_seed);
  EXPECT_NE(Field(a, "paramDigest"), Field(other_seed, "paramDigest")) << "the seed must matter";
}

TEST(LocalCluster, TwoWorkersWithBatchBMatchOneWorkerWithBatch2B) {
  RunOutcome two = RunMlp({"--workers", "2", "--set", "training.microBatch=16"});
  RunOutcome one = RunMlp({"--workers", "1", "--set", "training.microBatch=32"});
  ASSERT_EQ(two.cmd.exit_code, 0) << Diagnose(two);
  ASSERT_EQ(one.cmd.exit_code, 0) << Diagnose(one);
  EXPECT_EQ(Num(two, "worldSize"), 2);
  EXPECT_EQ(Num(one, "worldSize"), 1);
  auto w2 = ckpt::LoadWeights(Field(two, "weightsPath"));
  auto w1 = ckpt::LoadWeights(Field(one, "weightsPath"));
  ASSERT_TRUE(w2.ok() && w1.ok());
  ASSERT_EQ(w2->values.size(), w1->values.size());
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < w1->values.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(w1->values[i] - w2->values[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(w1->values[i])));
  }
  // Only the order of float additions differs (two partial sums vs one): measured 6e-8 against
  // weights up to 0.7 after 40 AdamW steps.
  EXPECT_LT(max_diff, 1e-6 * max_abs) << "max |w1 - w2| = " << max_diff << ", max |w| = " << max_abs;
  EXPECT_NEAR(Num(two, "finalLoss"), Num(one, "finalLoss"), 1e-4);
}

TEST(LocalCluster, ABadSpecIsRefusedNamingTheField) {
  RunOutcome o = RunMlp({"--set", "training.wordSize=2"});
  EXPECT_EQ(o.cmd.exit_code, 2);
  EXPECT_NE(o.cmd.err.find("training.wordSize"), std::string::npos) << o.cmd.err;
  RunOutcome typed = RunMlp({"--set", "training.microBatch=lots"});
  EXPECT_EQ(typed.cmd.exit_code, 2);
  EXPECT_NE(typed.cmd.err.find("training.microBatch"), std::string::npos) << typed.cmd.err;
}

TEST(LocalCluster, CtrlCStopsEveryChild) {
  const std::string dir = MakeTempDir();
  const pid_t cli =
      StartBinary({"gradsync", "run", ExamplePath("mlp.yaml"), "--state-dir", dir, "--set", "training.epochs=1000"},
                  dir + "/cli.log");
  // Wait until training runs (the cluster file exists and a step was reported).
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (ReadFile(dir + "/cli.log").find("step ") == std::string::npos && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  absl::StatusOr<cluster::LocalClusterFile> cluster = cluster::ReadLocalClusterFile(dir);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::vector<pid_t> pids = cluster->pids;
  ASSERT_EQ(pids.size(), 4u) << cluster::LocalClusterFileJson(*cluster);  // coordinator, metrics service, 2 workers
  ::kill(cli, SIGINT);
  int status = 0;
  ::waitpid(cli, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130) << ReadFile(dir + "/cli.log");
  for (pid_t p : pids) EXPECT_FALSE(ProcessAlive(p)) << "child " << p << " survived";
  // The job was cancelled, not cut off: its ranks saved the weights at the next step boundary.
  int saved = 0;
  for (const auto& job : std::filesystem::directory_iterator(dir + "/artifacts")) {
    saved += ckpt::LoadWeights((job.path() / "weights.bin").string()).ok();
  }
  EXPECT_EQ(saved, 1) << ReadFile(dir + "/cli.log");
}

TEST(LocalCluster, UpSubmitPendingCancelDown) {
  const std::string dir = MakeTempDir();
  CommandResult up = RunBinary({"gradsync", "local", "up", "--workers", "1", "--state-dir", dir});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  const auto endpoints = ParseFlatJson(up.out);
  const std::string address = endpoints.count("coordinator") ? endpoints.at("coordinator") : "";
  ASSERT_FALSE(address.empty()) << up.out;
  absl::StatusOr<cluster::LocalClusterFile> cluster = cluster::ReadLocalClusterFile(dir);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ(cluster->endpoints.at("coordinator"), address);
  CommandResult health = RunBinary({"gradsync", "healthcheck", address});
  EXPECT_EQ(health.exit_code, 0) << health.err;
  EXPECT_NE(health.out.find("SERVING"), std::string::npos) << health.out;

  // Two ranks asked for, one worker registered: the job waits and says why.
  CommandResult submit = RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--state-dir", dir});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string job = submit.out.substr(0, submit.out.find('\n'));
  ASSERT_EQ(job.rfind("jobs/", 0), 0u) << submit.out;
  absl::SleepFor(absl::Seconds(1));
  CommandResult get = RunBinary({"gradsync", "get", job, "-o", "json", "--state-dir", dir});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_NE(get.out.find("\"PENDING\""), std::string::npos) << get.out;
  EXPECT_NE(get.out.find("waiting for 2 idle workers: 1 idle of 1 registered"), std::string::npos) << get.out;

  // A job that fits runs to the end on the same cluster; --wait returns its outcome.
  CommandResult small =
      RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--state-dir", dir, "--set", "training.worldSize=1",
                 "--set", "training.maxSteps=20", "--set", "training.epochs=0", "--wait", "-o", "json"});
  EXPECT_EQ(small.exit_code, 0) << small.out << small.err;
  EXPECT_EQ(ParseFlatJson(small.out)["state"], "SUCCEEDED") << small.out;

  CommandResult list = RunBinary({"gradsync", "list", "--state-dir", dir});
  EXPECT_NE(list.out.find("PENDING"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("SUCCEEDED"), std::string::npos) << list.out;
  // GRADSYNC_STATE_DIR stands for --state-dir, as the README's quick start uses it.
  ::setenv("GRADSYNC_STATE_DIR", dir.c_str(), 1);
  CommandResult env_list = RunBinary({"gradsync", "list"});
  ::unsetenv("GRADSYNC_STATE_DIR");
  EXPECT_EQ(env_list.exit_code, 0) << env_list.err;
  EXPECT_NE(env_list.out.find("SUCCEEDED"), std::string::npos) << env_list.out;

  CommandResult cancel = RunBinary({"gradsync", "cancel", job, "--state-dir", dir});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_NE(cancel.out.find("CANCELLED"), std::string::npos);
  CommandResult again = RunBinary({"gradsync", "cancel", job, "--state-dir", dir});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("already ended"), std::string::npos) << again.err;

  const std::string up_pid = ParseFlatJson(up.out)["pid"];
  CommandResult down = RunBinary({"gradsync", "local", "down", "--state-dir", dir});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  int pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(up_pid, &pid));
  EXPECT_FALSE(ProcessAlive(pid));
  CommandResult unreachable = RunBinary({"gradsync", "get", job, "--address", address});
  EXPECT_NE(unreachable.exit_code, 0);
  CommandResult gone = RunBinary({"gradsync", "healthcheck", address, "--timeout", "1"});
  EXPECT_EQ(gone.exit_code, 1) << gone.out;
}

// `gradsync local up` makes its cluster current: commands that name no server reach it (the job
// API and the metrics API), the environment and --address still win, and `local down` with no
// --state-dir stops it and forgets it. The harness gives this process a config dir of its own.
TEST(LocalCluster, CommandsReachTheCurrentClusterUntilItIsDown) {
  const std::string dir = MakeTempDir();
  const std::string record = std::string(std::getenv("GRADSYNC_CONFIG_DIR")) + "/current-cluster";
  CommandResult up = RunBinary({"gradsync", "local", "up", "--workers", "1", "--state-dir", dir});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_NE(up.err.find(record), std::string::npos) << "says where it recorded the cluster: " << up.err;
  EXPECT_EQ(ReadFile(record), std::filesystem::canonical(dir).string() + "\n");

  CommandResult job =
      RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--set", "training.worldSize=1", "--set",
                 "training.maxSteps=20", "--set", "training.epochs=0", "--wait", "-o", "json"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  auto summary = ParseFlatJson(job.out);
  EXPECT_EQ(summary["state"], "SUCCEEDED") << job.out;
  CommandResult list = RunBinary({"gradsync", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("SUCCEEDED"), std::string::npos) << list.out;
  CommandResult report = RunBinary({"gradsync", "report", summary["id"], "-o", dir + "/curve.svg"});
  EXPECT_EQ(report.exit_code, 0) << "the metrics API comes from the current cluster too: " << report.err;

  // Whatever names a server outranks the current cluster.
  ::setenv("GRADSYNC_ADDRESS", "127.0.0.1:1", 1);
  CommandResult env = RunBinary({"gradsync", "list"});
  ::unsetenv("GRADSYNC_ADDRESS");
  EXPECT_NE(env.exit_code, 0);
  EXPECT_NE(env.err.find("127.0.0.1:1"), std::string::npos) << env.err;
  CommandResult flag = RunBinary({"gradsync", "list", "--address", "127.0.0.1:1"});
  EXPECT_NE(flag.exit_code, 0);
  EXPECT_NE(flag.err.find("127.0.0.1:1"), std::string::npos) << flag.err;

  CommandResult down = RunBinary({"gradsync", "local", "down"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  int pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(ParseFlatJson(up.out)["pid"], &pid));
  EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_FALSE(std::filesystem::exists(record)) << "local down forgets the cluster it stopped";
  CommandResult again = RunBinary({"gradsync", "local", "down"});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("no current cluster"), std::string::npos) << again.err;
}

// The CPUs process `pid` may run on, as the kernel reports them ("0-1", "1").
std::string CpusAllowed(const std::string& pid) {
  const std::string status = ReadFile("/proc/" + pid + "/status");
  const std::string key = "Cpus_allowed_list:";
  const size_t at = status.find(key);
  if (at == std::string::npos) return "";
  const size_t begin = status.find_first_not_of(" \t", at + key.size());
  return status.substr(begin, status.find('\n', begin) - begin);
}

// The pid of the running process whose command line holds `needle`, or "".
std::string PidWithArgument(const std::string& needle) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadFile(e.path().string() + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos) return name;
  }
  return "";
}

TEST(LocalCluster, EachWorkerRunsOnItsShareOfTheCpus) {
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU: two workers share it unbound";
  for (const bool bind : {true, false}) {
    const std::string dir = MakeTempDir();
    std::vector<std::string> args = {"gradsync", "local", "up", "--workers", "2", "--state-dir", dir};
    if (!bind) args.push_back("--no-cpu-binding");
    CommandResult up = RunBinary(args);
    ASSERT_EQ(up.exit_code, 0) << up.err;
    for (int i = 0; i < 2; ++i) {
      // A worker writes its endpoints file once serving, after binding.
      const std::string endpoints = absl::StrCat(dir, "/worker-", i, ".json");
      for (int t = 0; t < 200 && !std::filesystem::exists(endpoints); ++t) absl::SleepFor(absl::Milliseconds(100));
      const std::string pid = PidWithArgument("--endpoints_file=" + endpoints);
      ASSERT_FALSE(pid.empty()) << "worker " << i << " is not running";
      const std::string want = FormatCpuList(bind ? CpuShare(cpus, 2, i) : cpus);
      EXPECT_EQ(CpusAllowed(pid), want) << "worker " << i << (bind ? " bound" : " unbound") << ", pid " << pid << ": "
                                        << ReadFile("/proc/" + pid + "/cmdline");
    }
    if (bind) {
      EXPECT_NE(ReadFile(dir + "/logs/worker-1.log").find("bound to CPUs " + FormatCpuList(CpuShare(cpus, 2, 1))),
                std::string::npos);
    }
    EXPECT_EQ(RunBinary({"gradsync", "local", "down", "--state-dir", dir}).exit_code, 0);
  }
}

TEST(Worker, RetriesAWrongCoordinatorAddressWithBackoffAndSaysWhy) {
  const std::string dir = MakeTempDir();
  const pid_t worker = StartBinary(WorkerArgs("127.0.0.1:1"), dir + "/worker.log");
  absl::SleepFor(absl::Milliseconds(1500));
  ASSERT_TRUE(ProcessAlive(worker)) << ReadFile(dir + "/worker.log");
  ::kill(worker, SIGTERM);
  int status = 0;
  ::waitpid(worker, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::string log = ReadFile(dir + "/worker.log");
  EXPECT_NE(log.find("cannot register with coordinator at 127.0.0.1:1 (attempt 2)"), std::string::npos) << log;
  EXPECT_NE(log.find("retrying in"), std::string::npos) << log;
}

}  // namespace
}  // namespace gradsync::testing

namespace gradsync::testing {
namespace {

// A worker killed again and again (25 times, past the 20 restarts that once stopped the whole
// cluster) is started again each time, later each time up to the longest backoff; the coordinator
// and the metrics service never stop for it. A service that keeps dying is started again too.
TEST(LocalCluster, AWorkerThatKeepsDyingSlowsDownButNeverStopsTheCluster) {
  cluster::LocalClusterOptions options;
  options.workers = 1;
  options.state_dir = MakeTempDir();
  options.binary_dir = BinaryDirectory();
  options.restart_backoff = absl::Milliseconds(10);
  options.max_restart_backoff = absl::Milliseconds(80);
  cluster::LocalCluster cluster(options);
  ASSERT_TRUE(cluster.Start().ok());
  const std::vector<pid_t> services = {cluster.pids()[0], cluster.pids()[1]};
  // Kills child `index` and supervises until it runs again; how long that took.
  auto kill_and_wait = [&cluster](size_t index, const std::string& name) -> absl::StatusOr<absl::Duration> {
    const pid_t pid = cluster.pids()[index];
    ::kill(pid, SIGKILL);
    const absl::Time killed = absl::Now();
    while (absl::Now() - killed < absl::Seconds(20)) {
      absl::StatusOr<std::vector<std::string>> restarted = cluster.Supervise();
      if (!restarted.ok()) return restarted.status();
      if (std::find(restarted->begin(), restarted->end(), name) != restarted->end()) return absl::Now() - killed;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return absl::DeadlineExceededError(name + " was not started again");
  };
  std::vector<absl::Duration> waits;
  for (int i = 0; i < 25; ++i) {
    absl::StatusOr<absl::Duration> waited = kill_and_wait(2, "worker-0");
    ASSERT_TRUE(waited.ok()) << "kill " << i + 1 << ": " << waited.status();
    waits.push_back(*waited);
  }
  EXPECT_LT(waits[0], absl::Milliseconds(80)) << "the first restart waits the shortest backoff";
  EXPECT_GE(waits[24], absl::Milliseconds(80)) << "a crash loop waits the longest";
  EXPECT_EQ((std::vector<pid_t>{cluster.pids()[0], cluster.pids()[1]}), services) << "a service was restarted";
  EXPECT_TRUE(cluster.CheckAlive().ok());
  // The metrics service killed three times comes back each time, on its port.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(kill_and_wait(1, "metrics").ok());
  cluster.Stop();
}

// `local down` signals the supervisor the cluster file names only while that very process runs: a
// pid reused by another process (here a sleep, whose start time differs) is left alone.
TEST(LocalCluster, DownNeverSignalsAProcessThatReusedTheSupervisorsPid) {
  const std::string dir = MakeTempDir();
  absl::StatusOr<pid_t> other = Spawn({{"/bin/sleep", "30"}, ""});
  ASSERT_TRUE(other.ok()) << other.status();
  const std::optional<uint64_t> start = ProcessStartTime(*other);
  ASSERT_TRUE(start.has_value());
  cluster::LocalClusterFile file;
  file.endpoints = {{"coordinator", "127.0.0.1:1"}};
  file.supervisor_pid = *other;
  file.supervisor_start = *start + 1;  // the supervisor that wrote the file started at another time
  ASSERT_TRUE(cluster::WriteLocalClusterFile(dir, file).ok());
  CommandResult down = RunBinary({"gradsync", "local", "down", "--state-dir", dir});
  EXPECT_EQ(down.exit_code, 1) << down.out;
  EXPECT_TRUE(absl::StrContains(down.err, "no local cluster runs")) << down.err;
  EXPECT_TRUE(Alive(*other)) << "local down signalled a process that is not its cluster's";
  StopAll({*other}, absl::Seconds(1));
}

TEST(LocalClusterMetrics, TrainingGoesOnWhenTheMetricsServiceDiesAndReportsDrawTheCurves) {
  const std::string dir = MakeTempDir();
  CommandResult up = RunBinary({"gradsync", "local", "up", "--workers", "2", "--state-dir", dir});
  ASSERT_EQ(up.exit_code, 0) << up.err;

  // A job with the metrics service alive: watch prints progress and the loss curve; report draws it
  // (the CLI finds the services and their tokens through the state dir).
  CommandResult first = RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--state-dir", dir, "--set",
                                   "training.maxSteps=60", "--set", "training.epochs=0"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string job = first.out.substr(0, first.out.find('\n'));
  CommandResult watch = RunBinary({"gradsync", "watch", job, "--state-dir", dir});
  EXPECT_EQ(watch.exit_code, 0) << watch.out << watch.err;
  EXPECT_NE(watch.out.find("SUCCEEDED"), std::string::npos) << watch.out;
  EXPECT_NE(watch.out.find("loss curve:"), std::string::npos) << watch.out;
  const std::string svg = dir + "/report.svg";
  CommandResult report = RunBinary({"gradsync", "report", job, "-o", svg, "--state-dir", dir});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string picture = ReadFile(svg);
  EXPECT_NE(picture.find("<svg"), std::string::npos);
  EXPECT_EQ(picture.find("no data"), std::string::npos) << "both curves must have points";
  EXPECT_NE(picture.find(job.substr(5)), std::string::npos);

  // Kill the metrics service; the next job trains to the end regardless.
  absl::StatusOr<cluster::LocalClusterFile> cluster = cluster::ReadLocalClusterFile(dir);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::vector<pid_t> pids = cluster->pids;
  ASSERT_GE(pids.size(), 2u);
  const pid_t metrics = pids[1];
  CommandResult second = RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--state-dir", dir, "--set",
                                    "training.maxSteps=200", "--set", "training.epochs=0"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const std::string job2 = second.out.substr(0, second.out.find('\n'));
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_EQ(::kill(metrics, SIGKILL), 0) << "the metrics service (pid " << metrics << ") was not running";
  CommandResult done = RunBinary({"gradsync", "watch", job2, "--state-dir", dir, "-o", "json"});
  EXPECT_EQ(done.exit_code, 0) << done.out << done.err;
  EXPECT_EQ(ParseFlatJson(done.out)["state"], "SUCCEEDED") << done.out;
  EXPECT_EQ(ParseFlatJson(done.out)["globalStep"], "200") << done.out;
  EXPECT_EQ(RunBinary({"gradsync", "local", "down", "--state-dir", dir}).exit_code, 0);
}

}  // namespace
}  // namespace gradsync::testing

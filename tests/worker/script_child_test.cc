// A script rank's pieces without a cluster: the torchrun environment from a layout, the child
// process with its output read line by line, and stopping its whole process group.
#include "script_child.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gradsync/core/child_process.h"
#include "gtest/gtest.h"
#include "script_env.h"

namespace gradsync::worker {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

std::map<std::string, std::string> AsMap(const std::vector<std::string>& env) {
  std::map<std::string, std::string> out;
  for (const std::string& kv : env) out[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  return out;
}

TEST(TorchrunEnvironment, NumbersRanksWithinAndAcrossHosts) {
  // Five ranks on two hosts, interleaved as a scheduler may place them.
  const ScriptLayout layout{"10.0.0.2", 29400, {"b", "a", "b", "a", "a"}};
  v1::Assignment a;
  a.set_job_id("sft-1a2b3");
  a.set_world_size(5);
  a.set_restarts(2);
  a.mutable_spec()->mutable_training()->set_max_restarts(4);
  std::vector<std::map<std::string, std::string>> env;
  for (int r = 0; r < 5; ++r) {
    a.set_rank(r);
    env.push_back(AsMap(TorchrunEnvironment(a, layout, false)));
  }
  const std::vector<std::string> local_rank = {"0", "0", "1", "1", "2"};
  const std::vector<std::string> local_world = {"2", "3", "2", "3", "3"};
  const std::vector<std::string> group_rank = {"0", "1", "0", "1", "1"};
  for (int r = 0; r < 5; ++r) {
    SCOPED_TRACE(r);
    EXPECT_EQ(env[r]["RANK"], std::to_string(r));
    EXPECT_EQ(env[r]["ROLE_RANK"], std::to_string(r));
    EXPECT_EQ(env[r]["LOCAL_RANK"], local_rank[r]);
    EXPECT_EQ(env[r]["LOCAL_WORLD_SIZE"], local_world[r]);
    EXPECT_EQ(env[r]["GROUP_RANK"], group_rank[r]);
    EXPECT_EQ(env[r]["GROUP_WORLD_SIZE"], "2");
    EXPECT_EQ(env[r]["WORLD_SIZE"], "5");
    EXPECT_EQ(env[r]["MASTER_ADDR"], "10.0.0.2");
    EXPECT_EQ(env[r]["MASTER_PORT"], "29400");
    EXPECT_EQ(env[r]["TORCHELASTIC_RESTART_COUNT"], "2");
    EXPECT_EQ(env[r]["TORCHELASTIC_MAX_RESTARTS"], "4");
    EXPECT_EQ(env[r]["TORCHELASTIC_RUN_ID"], "sft-1a2b3");
    EXPECT_EQ(env[r]["OMP_NUM_THREADS"], "1");
  }
  // OMP_NUM_THREADS the worker inherited is left to the child.
  a.set_rank(0);
  EXPECT_EQ(AsMap(TorchrunEnvironment(a, layout, true)).count("OMP_NUM_THREADS"), 0u);
}

TEST(ChooseFreePort, BindsOnTheHost) {
  absl::StatusOr<int> port = ChooseFreePort("127.0.0.1");
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_GT(*port, 0);
  EXPECT_FALSE(ChooseFreePort("no-such-host.invalid").ok());
}

// Lines the child wrote, by stream.
struct Lines {
  absl::Mutex mu;
  std::vector<std::string> out, err;
  ChildLine Sink() {
    return [this](std::string_view stream, std::string_view line) {
      absl::MutexLock lock(&mu);
      (stream == "stdout" ? out : err).emplace_back(line);
    };
  }
};

ChildSpec Shell(const std::string& script) { return ChildSpec{.argv = {"/bin/sh", "-c", script}}; }

TEST(ScriptChild, DeliversEveryLineOfBothStreamsAndTheExitStatus) {
  Lines lines;
  ChildSpec spec = Shell("echo one; echo two >&2; printf 'no newline'; echo \"$GS_TEST_VAR in $(pwd)\" >&2; exit 3");
  spec.env = {"GS_TEST_VAR=forced"};
  spec.working_dir = "/tmp";
  auto child = ScriptChild::Start(spec, lines.Sink());
  ASSERT_TRUE(child.ok()) << child.status();
  std::optional<int> status;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!(status = (*child)->Poll()).has_value() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 3) << DescribeWaitStatus(*status);
  ASSERT_TRUE((*child)->DrainOutput(absl::Seconds(5)));
  absl::MutexLock lock(&lines.mu);
  EXPECT_THAT(lines.out, ::testing::ElementsAre("one", "no newline"));
  EXPECT_THAT(lines.err, ::testing::ElementsAre("two", "forced in /tmp"));
}

// Running: a zombie (killed, waiting for init to reap it) is not.
bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

TEST(ScriptChild, StopKillsTheWholeGroupEvenWhenSigtermIsIgnored) {
  const std::string pid_file = ::testing::TempDir() + "/grandchild.pid";
  std::filesystem::remove(pid_file);
  Lines lines;
  // The child ignores SIGTERM and leaves a grandchild in its group.
  auto child = ScriptChild::Start(
      Shell("trap '' TERM; sleep 300 & echo $! > " + pid_file + "; echo ready; while true; do sleep 0.05; done"),
      lines.Sink());
  ASSERT_TRUE(child.ok()) << child.status();
  pid_t grandchild = 0;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(10); grandchild == 0 && absl::Now() < deadline;) {
    std::ifstream in(pid_file);
    int pid = 0;
    if (in >> pid) grandchild = pid;
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_GT(grandchild, 0);
  EXPECT_EQ(::getpgid((*child)->pid()), (*child)->pid()) << "the child leads its own process group";
  const absl::Time start = absl::Now();
  const int status = (*child)->Stop(absl::Milliseconds(300));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(300)) << "SIGKILL came before the grace ran out";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << DescribeWaitStatus(status);
  for (const absl::Time deadline = absl::Now() + absl::Seconds(5); Alive(grandchild) && absl::Now() < deadline;) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_FALSE(Alive(grandchild));
}

TEST(ScriptChild, AChildThatExitsTakesItsGroupWithIt) {
  const std::string pid_file = ::testing::TempDir() + "/orphan.pid";
  std::filesystem::remove(pid_file);
  Lines lines;
  auto child = ScriptChild::Start(Shell("sleep 300 & echo $! > " + pid_file + "; exit 0"), lines.Sink());
  ASSERT_TRUE(child.ok());
  std::optional<int> status;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(10);
       !(status = (*child)->Poll()).has_value() && absl::Now() < deadline;) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(status.has_value());
  int orphan = 0;
  std::ifstream(pid_file) >> orphan;
  ASSERT_GT(orphan, 0);
  for (const absl::Time deadline = absl::Now() + absl::Seconds(5); Alive(orphan) && absl::Now() < deadline;) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_FALSE(Alive(orphan));
}

TEST(FindProgram, LooksUpPathAndTheWorkingDirectory) {
  const absl::StatusOr<std::string> sh = FindProgram("sh", "/nonexistent:/bin:/usr/bin", "/tmp");
  ASSERT_TRUE(sh.ok()) << sh.status();
  EXPECT_THAT(*sh, HasSubstr("/sh"));
  EXPECT_EQ(FindProgram("gradsync-no-such-program", "/bin:/usr/bin", "/tmp").status().code(),
            absl::StatusCode::kNotFound);
  const std::string dir = ::testing::TempDir() + "/find_program";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/train.sh") << "#!/bin/sh\n";
  EXPECT_EQ(FindProgram("./train.sh", "", dir).status().code(), absl::StatusCode::kFailedPrecondition)
      << "not executable";
  std::filesystem::permissions(dir + "/train.sh", std::filesystem::perms::owner_all);
  EXPECT_EQ(FindProgram("./train.sh", "", dir).value_or(""), dir + "/./train.sh");
}

}  // namespace
}  // namespace gradsync::worker

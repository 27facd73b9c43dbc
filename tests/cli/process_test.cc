// Spawn's environment: defaults the child gets unless this process has the variable set, as the
// local cluster and the benchmarks give training processes OPENBLAS_NUM_THREADS=1.
#include "gradsync/core/child_process.h"

#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace gradsync::cli {
namespace {

// The environment /usr/bin/env prints in a child spawned with `defaults`.
std::string ChildEnvironment(const std::vector<std::string>& defaults) {
  char dir[] = "/tmp/gradsync-process-test-XXXXXX";
  EXPECT_NE(::mkdtemp(dir), nullptr);
  const std::string log = std::string(dir) + "/env.log";
  absl::StatusOr<pid_t> pid = Spawn({{"/usr/bin/env"}, log, defaults});
  EXPECT_TRUE(pid.ok()) << pid.status();
  if (!pid.ok()) return "";
  int status = 0;
  ::waitpid(*pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  return "\n" + text.str();  // every line, the first included, starts after a newline
}

TEST(Spawn, AddsEnvironmentDefaultsTheParentLacks) {
  ::unsetenv("GRADSYNC_SPAWN_TEST_A");
  const std::string env = ChildEnvironment({"GRADSYNC_SPAWN_TEST_A=1"});
  EXPECT_NE(env.find("\nGRADSYNC_SPAWN_TEST_A=1\n"), std::string::npos) << env;
  EXPECT_NE(env.find("PATH="), std::string::npos) << "the parent's environment is passed on";
}

TEST(Spawn, KeepsWhatTheParentSet) {
  ::setenv("GRADSYNC_SPAWN_TEST_B", "4", 1);
  const std::string env = ChildEnvironment({"GRADSYNC_SPAWN_TEST_B=1"});
  EXPECT_NE(env.find("\nGRADSYNC_SPAWN_TEST_B=4\n"), std::string::npos) << env;
  EXPECT_EQ(env.find("GRADSYNC_SPAWN_TEST_B=1"), std::string::npos) << env;
  ::unsetenv("GRADSYNC_SPAWN_TEST_B");
}

TEST(Spawn, TrainingProcessesGetOneBlasThread) {
  ::unsetenv("OPENBLAS_NUM_THREADS");
  EXPECT_NE(ChildEnvironment(TrainingEnvDefaults()).find("\nOPENBLAS_NUM_THREADS=1\n"), std::string::npos);
}

}  // namespace
}  // namespace gradsync::cli

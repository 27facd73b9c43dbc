// A newcomer's first hour, command by command with the real binaries: a local cluster that is
// whole when `local up` returns and says which --data-root a spec needs, `watch` on terminals 80
// and 120 columns wide, `cancel` that returns once the workers are free, a job named by its
// spec name, -o yaml integers, the STEP of an ended job, logs that outlive a coordinator killed
// with SIGKILL, a log line for model.initFrom, job completion, the curves after `local down`, and
// one spelling of flags and variables for the CLI and the daemons.
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gradsync/cluster/local_cluster_file.h"
#include "gtest/gtest.h"
#include "terminal_screen.h"

namespace gradsync::testing {
namespace {

CommandResult Gradsync(std::vector<std::string> args, const std::string& dir) {
  args.insert(args.begin(), "gradsync");
  args.push_back("--state-dir");
  args.push_back(dir);
  return RunBinary(args);
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// What `gradsync ARGS` writes to a terminal `columns` wide in `seconds`, then interrupted (Ctrl-C).
std::string OnTerminal(int columns, const std::vector<std::string>& args, absl::Duration seconds) {
  struct winsize size {};
  size.ws_col = static_cast<unsigned short>(columns);
  size.ws_row = 40;
  int controller = -1;
  const std::string exe = BinaryDirectory() + "/gradsync";
  std::vector<std::string> all = {exe};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::forkpty(&controller, nullptr, nullptr, &size);
  if (pid == 0) {
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  std::string out;
  const absl::Time stop = absl::Now() + seconds;
  bool interrupted = false;
  for (;;) {
    if (!interrupted && absl::Now() > stop) {
      ::kill(pid, SIGINT);
      interrupted = true;
    }
    fd_set read;
    FD_ZERO(&read);
    FD_SET(controller, &read);
    struct timeval wait {0, 100000};
    if (::select(controller + 1, &read, nullptr, nullptr, &wait) > 0) {
      char buffer[4096];
      const ssize_t n = ::read(controller, buffer, sizeof buffer);
      if (n <= 0) break;  // the program ended: its side of the terminal closed
      out.append(buffer, static_cast<size_t>(n));
    }
  }
  ::close(controller);
  ::waitpid(pid, nullptr, 0);
  return out;
}

// The workers `gradsync workers -o json` lists in `state`.
int WorkersIn(const std::string& dir, const std::string& state) {
  const CommandResult workers = Gradsync({"workers", "-o", "json"}, dir);
  EXPECT_EQ(workers.exit_code, 0) << workers.err;
  return Count(workers.out, absl::StrCat("\"", state, "\""));
}

// The first line of `text`, without its newline.
std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

TEST(FirstHour, ALocalClusterTakesWhatRunTakesShowsItAndStopsWhatItCancels) {
  const std::string dir = MakeTempDir();
  const CommandResult up = RunBinary({"gradsync", "local", "up", "--workers", "2", "--state-dir", dir});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_EQ(WorkersIn(dir, "WORKER_IDLE"), 2) << "both workers registered when `local up` returned";

  // The demo reads the licence texts, outside this cluster's data root: the error says how to
  // start one that reads them, and that command works as written.
  const CommandResult refused = Gradsync({"submit", ExamplePath("demo.yaml")}, dir);
  ASSERT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_TRUE(absl::StrContains(refused.err, "--data-root /usr/share/common-licenses")) << refused.err;
  const std::string advice = "gradsync local down && gradsync local up --workers 2 --state-dir " + dir;
  const size_t at = refused.err.find(advice);
  ASSERT_NE(at, std::string::npos) << refused.err;
  std::vector<std::string> again =
      absl::StrSplit(FirstLine(refused.err.substr(at + std::string("gradsync local down && ").size())), ' ');
  ASSERT_EQ(RunBinary({"gradsync", "local", "down", "--state-dir", dir}).exit_code, 0);
  const CommandResult up_again = RunBinary(again);
  ASSERT_EQ(up_again.exit_code, 0) << absl::StrJoin(again, " ") << "\n" << up_again.err;
  const CommandResult submitted =
      Gradsync({"submit", ExamplePath("demo.yaml"), "--set", "training.maxSteps=100000", "--set", "training.epochs=0",
                "--set", "training.logEvery=2"},
               dir);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job = FirstLine(submitted.out);
  WaitForJobWith({"--state-dir", dir}, job, absl::Seconds(120),
                 [](const std::string& json) { return ProgressStep(json) >= 4; });

  // `watch` on terminals of two widths: no line of its live block wraps, one progress line stays.
  for (int columns : {80, 120}) {
    TerminalScreen screen(columns);
    screen.Write(OnTerminal(columns, {"watch", job, "--state-dir", dir}, absl::Seconds(4)));
    const std::vector<std::string> rows = screen.Rows();
    const std::string shown = absl::StrJoin(rows, "\n");
    // An event longer than the terminal wraps as any printed line does; the live block never.
    for (const std::string& row : screen.wrapped()) {
      EXPECT_FALSE(absl::StartsWith(row, "[#") || absl::StartsWith(row, "[.") || absl::StrContains(row, "/100000"))
          << "the live block wrapped at " << columns << " columns: " << row << "\n" << shown;
    }
    const int progress = static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const std::string& r) {
      return absl::StrContains(r, "/100000 |");
    }));
    EXPECT_EQ(progress, 1) << columns << " columns:\n" << shown;
  }

  // Cancelled, the job ends and its workers are free when the command returns.
  const CommandResult cancel = Gradsync({"cancel", job}, dir);
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_TRUE(absl::StrContains(cancel.out, "CANCELLED")) << cancel.out;
  EXPECT_EQ(WorkersIn(dir, "WORKER_BUSY"), 0) << "cancel returned before the ranks stopped";
  EXPECT_EQ(WorkersIn(dir, "WORKER_IDLE"), 2);
  EXPECT_EQ(RunBinary({"gradsync", "local", "down", "--state-dir", dir}).exit_code, 0);
}

TEST(FirstHour, AJobByItsNameFromSubmitToItsCurvesAfterTheClusterIsDown) {
  const std::string dir = MakeTempDir();
  ASSERT_EQ(RunBinary({"gradsync", "local", "up", "--workers", "1", "--state-dir", dir}).exit_code, 0);
  const std::vector<std::string> small = {"--set", "training.worldSize=1", "--set", "training.maxSteps=40",
                                          "--set", "training.epochs=0",    "--set", "training.logEvery=5"};
  std::vector<std::string> args = {"submit", ExamplePath("mlp.yaml"), "--set", "name=hour", "--set",
                                   "checkpoint.everySteps=20", "--wait"};
  args.insert(args.end(), small.begin(), small.end());
  const CommandResult done = Gradsync(args, dir);
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err;
  EXPECT_TRUE(absl::StrContains(done.err, "checkpoints: about ")) << done.err;
  EXPECT_TRUE(absl::StrContains(done.err, "checkpoint.keep 3: up to ")) << done.err;

  // Named by its spec name; -o yaml with integers; the STEP it ended at.
  const CommandResult name = Gradsync({"get", "hour", "-o", "name"}, dir);
  ASSERT_EQ(name.exit_code, 0) << name.err;
  const std::string job = FirstLine(name.out);
  ASSERT_TRUE(absl::StartsWith(job, "jobs/hour-")) << job;
  const std::string id(absl::StripPrefix(job, "jobs/"));
  const CommandResult yaml = Gradsync({"get", "hour", "-o", "yaml"}, dir);
  EXPECT_TRUE(absl::StrContains(yaml.out, "maxSteps: 40\n")) << yaml.out;
  EXPECT_TRUE(absl::StrContains(yaml.out, "globalStep: 40\n")) << yaml.out;
  const CommandResult list = Gradsync({"list"}, dir);
  EXPECT_TRUE(absl::StrContains(list.out, "40/40")) << list.out;

  // Its logs outlive the coordinator, killed outright and started again by the cluster.
  const CommandResult logs = Gradsync({"logs", "hour"}, dir);
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  ASSERT_GE(Count(logs.out, "\n"), 2) << logs.out;
  absl::StatusOr<cluster::LocalClusterFile> file = cluster::ReadLocalClusterFile(dir);
  ASSERT_TRUE(file.ok() && !file->pids.empty()) << file.status();
  const pid_t coordinator = file->pids.front();
  ASSERT_EQ(::kill(coordinator, SIGKILL), 0);
  CommandResult after;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(60); absl::Now() < deadline;) {
    after = Gradsync({"logs", "hour"}, dir);
    if (after.exit_code == 0 && !after.out.empty()) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_EQ(after.out, logs.out) << after.err;

  // A job that starts from the first one's weights says what it loaded.
  std::vector<std::string> tune = {"submit", ExamplePath("mlp.yaml"), "--set", "name=tuned", "--set",
                                   absl::StrCat("model.initFrom=", dir, "/artifacts/", id, "/weights.bin"), "--wait"};
  tune.insert(tune.end(), small.begin(), small.end());
  const CommandResult tuned = Gradsync(tune, dir);
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out << tuned.err;
  const CommandResult tuned_logs = Gradsync({"logs", "tuned"}, dir);
  EXPECT_TRUE(absl::StrContains(tuned_logs.out, "model.initFrom: loaded " + dir)) << tuned_logs.out;

  // Tab completion offers the cluster's jobs.
  ::setenv("GRADSYNC_STATE_DIR", dir.c_str(), 1);
  const std::string path = absl::StrCat(BinaryDirectory(), ":", std::getenv("PATH"));
  const CommandResult completion = RunProgram(
      "/bin/bash", {"-c", absl::StrCat("export PATH='", path, "'; source <(gradsync completion bash); _gradsync_jobs")});
  ::unsetenv("GRADSYNC_STATE_DIR");
  EXPECT_TRUE(absl::StrContains(completion.out, job + "\n")) << completion.out;
  EXPECT_TRUE(absl::StrContains(completion.out, "tuned\n")) << completion.out;

  // Down, the cluster left its curves where `report` reads them.
  ASSERT_EQ(RunBinary({"gradsync", "local", "down", "--state-dir", dir}).exit_code, 0);
  const CommandResult report = Gradsync({"report", job, "-o", dir + "/loss.csv"}, dir);
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(absl::StrContains(report.out, "series.jsonl")) << report.out;
  EXPECT_TRUE(absl::StrContains(ReadFile(dir + "/loss.csv"), "\n1,40,")) << ReadFile(dir + "/loss.csv");
}

// The daemons take the CLI's dashed spelling and show it; the CLI takes the daemons' underscores,
// the coordinator's name for its token file, and a GRADSYNC_STATE_DIR that holds a service's
// state rather than a local cluster does not hide GRADSYNC_ADDRESS.
TEST(FirstHour, OneSpellingForFlagsAndVariables) {
  const std::string dir = MakeTempDir();
  const std::string token = dir + "/auth.token";
  std::ofstream(token) << "first-hour-token-0123456789abcdef\n";
  ::chmod(token.c_str(), 0600);
  Children children;
  children.Start({"gradsync-coordinator", "--listen=127.0.0.1:0", "--rest-listen=127.0.0.1:0",
                  "--metrics-listen=127.0.0.1:0", "--state-dir=" + dir + "/state", "--auth-token-file=" + token,
                  "--endpoints-file=" + dir + "/endpoints.json"},
                 dir + "/coordinator.log");
  const auto endpoints = WaitForEndpoints(dir + "/endpoints.json");
  ASSERT_TRUE(endpoints.count("grpc")) << ReadFile(dir + "/coordinator.log");
  const CommandResult help = RunBinary({"gradsync-coordinator", "--help"});
  EXPECT_TRUE(absl::StrContains(help.out, "--state-dir")) << help.out;
  EXPECT_FALSE(absl::StrContains(help.out, "--state_dir")) << help.out;

  ::setenv("GRADSYNC_STATE_DIR", (dir + "/state").c_str(), 1);
  ::setenv("GRADSYNC_ADDRESS", endpoints.at("grpc").c_str(), 1);
  ::setenv("GRADSYNC_AUTH_TOKEN_FILE", token.c_str(), 1);
  const CommandResult by_env = RunBinary({"gradsync", "list"});
  ::unsetenv("GRADSYNC_AUTH_TOKEN_FILE");
  const CommandResult by_alias = RunBinary({"gradsync", "list", "--auth-token-file", token});
  const CommandResult by_underscore = RunBinary({"gradsync", "list", "--token_file=" + token});
  ::unsetenv("GRADSYNC_STATE_DIR");
  ::unsetenv("GRADSYNC_ADDRESS");
  for (const CommandResult* r : {&by_env, &by_alias, &by_underscore}) {
    EXPECT_EQ(r->exit_code, 0) << r->err;
    EXPECT_TRUE(absl::StartsWith(r->out, "ID ")) << r->out;
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/state/job_logs.db")) << "job logs are kept in the state directory";

  // `run` given no --state-dir says where it left its files.
  const std::string tmp = MakeTempDir();
  ::setenv("TMPDIR", tmp.c_str(), 1);
  const CommandResult run =
      RunBinary({"gradsync", "run", ExamplePath("mlp.yaml"), "--workers", "1", "--set", "training.maxSteps=2", "--set",
                 "training.epochs=0"});
  ::unsetenv("TMPDIR");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(absl::StrContains(run.err, "the run's files stay in " + tmp + "/gradsync-run-")) << run.err;
}

// Before any server is dialled: a model's parameter names, and an ignoreParams entry that names
// none of them.
TEST(FirstHour, ParameterNamesAreListedAndCheckedBeforeSubmitting) {
  const CommandResult params = RunBinary({"gradsync", "model", "params", "minimind-26m"});
  ASSERT_EQ(params.exit_code, 0) << params.err;
  EXPECT_TRUE(absl::StrContains(params.out, "freqs_cos")) << params.out;
  EXPECT_TRUE(absl::StrContains(params.out, "blocks.7.")) << params.out;
  const CommandResult bad = RunBinary({"gradsync", "submit", ExamplePath("demo.yaml"), "--set",
                                       "ddp.ignoreParams=[\"blocks.0.attn.qkv.weigth\"]", "--address", "127.0.0.1:1"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_TRUE(absl::StrContains(bad.err, "did you mean blocks.0.attn.qkv.weight?")) << bad.err;
  const CommandResult hf = RunBinary({"gradsync", "submit", ExamplePath("demo.yaml"), "--set",
                                      "model.transformer.hiddenSize=256", "--address", "127.0.0.1:1"});
  EXPECT_EQ(hf.exit_code, 2) << hf.err;
  EXPECT_TRUE(absl::StrContains(hf.err, "hiddenSize is Hugging Face's name for model.transformer.width")) << hf.err;
}

}  // namespace
}  // namespace gradsync::testing

// The CLI against a real coordinator's REST API (--address http://...): every job command works
// and prints what it prints over gRPC, errors keep the server's code and message, the token is
// never echoed, and `watch` follows a job run by a real worker to its end.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

class RestCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty());
    // Unique per run, so a match in any output can only come from this test's token.
    token_ = absl::StrCat("rest-token-", ::getpid(), "-", absl::ToUnixMicros(absl::Now()));
    WriteFile(dir_ + "/token", token_ + "\n");
    children_.Start(
        {"gradsync-coordinator", "--listen=127.0.0.1:0", "--rest_listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
         "--state_dir=" + dir_ + "/state", "--artifact_root=" + dir_ + "/artifacts",
         "--auth_token_file=" + dir_ + "/token", "--endpoints_file=" + dir_ + "/coordinator.json"},
        dir_ + "/coordinator.log");
    auto endpoints = WaitForEndpoints(dir_ + "/coordinator.json");
    ASSERT_FALSE(endpoints["rest"].empty()) << ReadFile(dir_ + "/coordinator.log");
    grpc_ = endpoints["grpc"];
    rest_ = "http://" + endpoints["rest"];
  }

  // `gradsync ARGS --address ADDRESS --token TOKEN`.
  CommandResult Cli(std::vector<std::string> args, const std::string& address) const {
    args.insert(args.end(), {"--address", address, "--token", token_});
    return RunBinary(args);
  }

  // Submits mlp.yaml for one worker; returns the job's name ("jobs/...") or fails the test.
  std::string Submit(const std::string& address, const std::vector<std::string>& sets) const {
    std::vector<std::string> args = {"gradsync", "submit", ExamplePath("mlp.yaml"), "--set", "training.worldSize=1"};
    for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
    CommandResult r = Cli(args, address);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(absl::StartsWith(r.out, "jobs/")) << r.out;
    return r.out.substr(0, r.out.find('\n'));
  }

  Children children_;
  std::string dir_, token_, grpc_, rest_;
};

TEST_F(RestCli, JobCommandsOverRestPrintWhatTheyPrintOverGrpc) {
  const std::string job = Submit(rest_, {});
  ASSERT_FALSE(HasFailure());

  CommandResult get = Cli({"gradsync", "get", job, "-o", "json"}, rest_);
  ASSERT_EQ(get.exit_code, 0) << get.err;
  auto fields = ParseFlatJson(get.out);
  EXPECT_EQ(fields["name"], job);
  EXPECT_EQ(fields["state"], "PENDING");
  EXPECT_EQ(get.out, Cli({"gradsync", "get", job, "-o", "json"}, grpc_).out);
  CommandResult text = Cli({"gradsync", "get", job}, rest_);
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("  Created  "), std::string::npos) << "the describe view lists the events" << text.out;
  EXPECT_EQ(text.out, Cli({"gradsync", "get", job}, grpc_).out);

  // A second job and a page size of 1: listing walks the REST pages.
  const std::string other = Submit(grpc_, {});
  CommandResult list = Cli({"gradsync", "list", "--page-size", "1"}, rest_);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find(job.substr(5)), std::string::npos) << list.out;
  EXPECT_NE(list.out.find(other.substr(5)), std::string::npos) << list.out;
  EXPECT_EQ(list.out, Cli({"gradsync", "list"}, grpc_).out);
  CommandResult list_json = Cli({"gradsync", "list", "-o", "json"}, rest_);
  EXPECT_EQ(list_json.exit_code, 0) << list_json.err;
  EXPECT_EQ(list_json.out, Cli({"gradsync", "list", "-o", "json"}, grpc_).out);

  CommandResult cancel = Cli({"gradsync", "cancel", job}, rest_);
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(cancel.out, job + " CANCELLED\n");
  EXPECT_EQ(ParseFlatJson(Cli({"gradsync", "get", job, "-o", "json"}, rest_).out)["state"], "CANCELLED");
  CommandResult again = Cli({"gradsync", "cancel", job}, rest_);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("FAILED_PRECONDITION"), std::string::npos) << again.err;
  EXPECT_EQ(again.err, Cli({"gradsync", "cancel", job}, grpc_).err);
}

TEST_F(RestCli, ErrorsKeepTheServersCodeAndMessage) {
  CommandResult unknown = Cli({"gradsync", "get", "no-such-job"}, rest_);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("NOT_FOUND"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("no-such-job"), std::string::npos) << unknown.err;
  EXPECT_EQ(unknown.err, Cli({"gradsync", "get", "no-such-job"}, grpc_).err);

  const std::string wrong = absl::StrCat("wrong-", token_);
  CommandResult denied =
      RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", rest_, "--token", wrong});
  EXPECT_NE(denied.exit_code, 0);
  EXPECT_NE(denied.err.find("UNAUTHENTICATED"), std::string::npos) << denied.err;
  EXPECT_EQ(denied.out.find(wrong), std::string::npos);
  EXPECT_EQ(denied.err.find(wrong), std::string::npos);
  CommandResult anonymous = RunBinary({"gradsync", "list", "--address", rest_});
  EXPECT_NE(anonymous.exit_code, 0);
  EXPECT_NE(anonymous.err.find("UNAUTHENTICATED"), std::string::npos) << anonymous.err;

  CommandResult bad = Cli({"gradsync", "submit", ExamplePath("mlp.yaml"), "--set", "training.microBatch=-3"}, rest_);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("training.microBatch"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err,
            Cli({"gradsync", "submit", ExamplePath("mlp.yaml"), "--set", "training.microBatch=-3"}, grpc_).err);

  // Nothing listens on port 1: the error names the address.
  CommandResult down = RunBinary({"gradsync", "list", "--address", "http://127.0.0.1:1"});
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_NE(down.err.find("UNAVAILABLE"), std::string::npos) << down.err;
  EXPECT_NE(down.err.find("http://127.0.0.1:1"), std::string::npos) << down.err;

  EXPECT_EQ(ReadFile(dir_ + "/coordinator.log").find(token_), std::string::npos);
}

TEST_F(RestCli, WatchOverRestFollowsAJobToSucceeded) {
  const std::string job = Submit(rest_, {"training.epochs=1", "training.logEvery=10"});
  ASSERT_FALSE(HasFailure());
  // Watching starts while the job waits for a worker, so the watch sees it change.
  const pid_t watch =
      children_.Start({"gradsync", "watch", job, "--address", rest_, "--token", token_}, dir_ + "/watch.log");
  absl::SleepFor(absl::Milliseconds(1500));
  children_.Start(WorkerArgs(grpc_), dir_ + "/worker.log");
  int status = -1;
  ASSERT_EQ(::waitpid(watch, &status, 0), watch);
  const std::string out = ReadFile(dir_ + "/watch.log");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out << ReadFile(dir_ + "/worker.log");
  const size_t created = out.find("[Created]"), scheduled = out.find("[Scheduled]");
  EXPECT_NE(created, std::string::npos) << out;
  EXPECT_NE(scheduled, std::string::npos) << out;
  EXPECT_LT(created, scheduled) << out;
  EXPECT_NE(out.find(": SUCCEEDED\n"), std::string::npos) << out;
  EXPECT_EQ(out.find(token_), std::string::npos);

  // Watching a job that has ended returns at once with its summary.
  CommandResult summary = Cli({"gradsync", "watch", job, "-o", "json"}, rest_);
  EXPECT_EQ(summary.exit_code, 0) << summary.err;
  auto fields = ParseFlatJson(summary.out);
  EXPECT_EQ(fields["state"], "SUCCEEDED") << summary.out;
  EXPECT_EQ(fields["id"], job.substr(5)) << summary.out;
}

}  // namespace
}  // namespace gradsync::testing

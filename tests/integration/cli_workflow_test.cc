// The CLI as kubectl and torchrun users drive it, with real processes on a local cluster: the
// worker pool (idle, busy with a rank, lost when killed), checkpoint save --wait on a running job,
// -o name / wide / yaml / json ({"items": [...]}), and relative data paths submitted from another
// directory than the one the cluster started in.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

namespace fs = std::filesystem;
using google::protobuf::Struct;
using google::protobuf::Value;

std::vector<std::string> With(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

Struct ParseObject(const std::string& json) {
  Struct s;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &s).ok()) << json;
  return s;
}

// The "items" of a {"items": [...]} answer (ADD_FAILURE when it is not that shape).
std::vector<Struct> Items(const std::string& json) {
  const Struct s = ParseObject(json);
  std::vector<Struct> items;
  auto it = s.fields().find("items");
  if (it == s.fields().end() || !it->second.has_list_value()) {
    ADD_FAILURE() << "no items list: " << json;
    return items;
  }
  for (const Value& v : it->second.list_value().values()) items.push_back(v.struct_value());
  return items;
}

std::string Field(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  if (it == s.fields().end()) return "";
  return it->second.has_string_value() ? it->second.string_value() : absl::StrCat(it->second.number_value());
}

// A local cluster for one test, stopped when the test ends.
class LocalClusterFixture : public ::testing::Test {
 protected:
  void Up(const std::vector<std::string>& extra) {
    state_ = MakeTempDir();
    CommandResult up = RunBinary(With({"gradsync", "local", "up", "--state-dir", state_}, extra));
    ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
    conn_ = {"--state-dir", state_};
  }
  void TearDown() override {
    if (!state_.empty()) RunBinary({"gradsync", "local", "down", "--state-dir", state_});
  }
  CommandResult Cli(std::vector<std::string> args) const { return RunBinary(With(std::move(args), conn_)); }

  std::string state_;
  std::vector<std::string> conn_;
};

class CliWorkflow : public LocalClusterFixture {};

TEST_F(CliWorkflow, WorkersCheckpointSaveAndOutputFormats) {
  Up({"--workers", "3", "--no-cpu-binding"});
  ASSERT_FALSE(HasFailure());
  // One rank training for far longer than the test: busy until cancelled.
  CommandResult submit =
      Cli({"gradsync", "submit", ExamplePath("mlp.yaml"), "--set", "training.worldSize=1", "--set",
           "training.maxSteps=10000000", "--set", "training.epochs=0", "--set", "training.logEvery=5", "-o", "name"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string job = submit.out.substr(0, submit.out.find('\n'));
  ASSERT_TRUE(absl::StartsWith(job, "jobs/")) << submit.out;
  const std::string id = job.substr(5);
  auto cancel = absl::MakeCleanup([&] { Cli({"gradsync", "cancel", job}); });
  WaitForJobWith(conn_, job, absl::Seconds(90), [](const std::string& j) { return ProgressStep(j) >= 1; });
  ASSERT_FALSE(HasFailure());

  // The pool: the job's rank on one worker, two idle.
  CommandResult workers = Cli({"gradsync", "workers", "-o", "json"});
  ASSERT_EQ(workers.exit_code, 0) << workers.err;
  std::vector<Struct> items = Items(workers.out);
  ASSERT_EQ(items.size(), 3u) << workers.out;
  int busy = 0, idle = 0;
  std::string idle_id, idle_pid;
  for (const Struct& w : items) {
    if (Field(w, "state") == "WORKER_BUSY") {
      ++busy;
      EXPECT_EQ(Field(w, "jobId"), id) << workers.out;
      EXPECT_EQ(Field(w, "rank"), "0") << workers.out;
    } else if (Field(w, "state") == "WORKER_IDLE") {
      ++idle;
      idle_id = Field(w, "id");
      idle_pid = Field(w, "pid");
    }
    EXPECT_EQ(Field(w, "hostname").empty(), false) << workers.out;
  }
  EXPECT_EQ(busy, 1) << workers.out;
  EXPECT_EQ(idle, 2) << workers.out;
  CommandResult table = Cli({"gradsync", "workers"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  for (const std::string& text : std::vector<std::string>{"HEARTBEAT", "busy", "idle", id, idle_id, "cpu"}) {
    EXPECT_NE(table.out.find(text), std::string::npos) << text << " in:\n" << table.out;
  }
  EXPECT_NE(Cli({"gradsync", "workers", "-o", "wide"}).out.find("REGISTERED"), std::string::npos);

  // -o name and -o wide.
  EXPECT_EQ(Cli({"gradsync", "get", id, "-o", "name"}).out, job + "\n");
  CommandResult names = Cli({"gradsync", "list", "-o", "name"});
  EXPECT_NE(names.out.find(job + "\n"), std::string::npos) << names.out;
  CommandResult wide = Cli({"gradsync", "list", "-o", "wide"});
  EXPECT_NE(wide.out.find("RESTARTS"), std::string::npos) << wide.out;
  EXPECT_NE(wide.out.find(id), std::string::npos) << wide.out;

  // A checkpoint on request, twice: the second is newer than the first.
  CommandResult saved = Cli({"gradsync", "checkpoint", "save", job, "--wait"});
  ASSERT_EQ(saved.exit_code, 0) << saved.out << saved.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(saved.out, m, std::regex(R"(checkpoint at step (\d+) committed in (\S+))")))
      << saved.out;
  const std::string dir = m[2];
  int64_t first = 0;
  ASSERT_TRUE(absl::SimpleAtoi(std::string(m[1]), &first));
  EXPECT_TRUE(fs::exists(fs::path(dir) / "MANIFEST.json")) << dir;
  CommandResult again = Cli({"gradsync", "checkpoint", "save", job, "--wait", "-o", "json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  int64_t second = 0;
  ASSERT_TRUE(absl::SimpleAtoi(Field(ParseObject(again.out), "step"), &second)) << again.out;
  EXPECT_GT(second, first);
  CommandResult listed = Cli({"gradsync", "checkpoint", "list", job});
  EXPECT_NE(listed.out.find(dir), std::string::npos) << listed.out;

  // An idle worker killed: the supervisor starts it again, and the one that died shows as lost
  // once its lease runs out (10 s).
  int pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(idle_pid, &pid)) << workers.out;
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  std::string last;
  bool lost = false;
  while (!lost && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(500));
    last = Cli({"gradsync", "workers", "-o", "json"}).out;
    int alive = 0;
    for (const Struct& w : Items(last)) {
      if (Field(w, "id") == idle_id && Field(w, "state") == "WORKER_LOST") lost = true;
      alive += Field(w, "state") != "WORKER_LOST";
    }
    lost = lost && alive == 3;
  }
  EXPECT_TRUE(lost) << "worker " << idle_id << " (pid " << pid << ") lost, and one started again:\n" << last;
  CommandResult with_lost = Cli({"gradsync", "workers"});
  EXPECT_NE(with_lost.out.find("lost"), std::string::npos) << with_lost.out;

  std::move(cancel).Invoke();
  WaitForJobWith(conn_, job, absl::Seconds(60),
                 [](const std::string& j) { return j.find("\"CANCELLED\"") != std::string::npos; });

  // kubectl's List shape, and YAML that reads back as the JSON.
  CommandResult list = Cli({"gradsync", "list", "-o", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const std::vector<Struct> jobs = Items(list.out);
  ASSERT_EQ(jobs.size(), 1u) << list.out;
  EXPECT_EQ(Field(jobs[0], "name"), job);
  const std::string python = PythonWithYaml();
  if (python.empty()) GTEST_SKIP() << "no python3 with PyYAML to read -o yaml back";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"gradsync", "list"}, {"gradsync", "get", job}}) {
    CommandResult json = Cli(With(args, {"-o", "json"})), yaml = Cli(With(args, {"-o", "yaml"}));
    ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
    CommandResult same = SameYamlData(python, json.out, yaml.out);
    EXPECT_EQ(same.exit_code, 0) << args[1] << ":\n" << same.out << "\n" << yaml.out;
  }
  // Heartbeats move between two calls; the rest of the pool does not.
  CommandResult same =
      SameYamlData(python, Cli({"gradsync", "workers", "-o", "json"}).out,
                   Cli({"gradsync", "workers", "-o", "yaml"}).out, {"heartbeatAge", "lastHeartbeatTime"});
  EXPECT_EQ(same.exit_code, 0) << same.out;
}

// Runs `args` with `dir` as the current directory.
CommandResult RunIn(const std::string& dir, const std::vector<std::string>& args) {
  const fs::path before = fs::current_path();
  fs::current_path(dir);
  CommandResult r = RunBinary(args);
  fs::current_path(before);
  return r;
}

// A spec's relative data paths, submitted to a local cluster, start in the directory the command
// runs in (not the one the cluster started in); the coordinator still confines them to its roots.
TEST_F(CliWorkflow, RelativeDataPathsStartWhereTheCommandRuns) {
  const std::string root = fs::canonical(MakeTempDir()).string();
  fs::create_directories(root + "/project/corpus");
  {
    std::ofstream text(root + "/project/corpus/lines.txt");
    for (int i = 0; i < 40; ++i) text << "Every line of this licence may be copied and shared as it is.\n";
  }
  const std::string spec =
      "name: relative\nmodel: {preset: gpt-tiny, device: cpu}\ndata: {text: {paths: [\"corpus/*.txt\"]}}\n"
      "training: {worldSize: 1, microBatch: 2, maxSteps: 3, logEvery: 1}\n";
  std::ofstream(root + "/project/job.yaml") << spec;
  Up({"--workers", "1", "--data-root", root});
  ASSERT_FALSE(HasFailure());

  CommandResult run = RunIn(root + "/project", With({"gradsync", "submit", "job.yaml", "--wait", "-o", "json"}, conn_));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const Struct summary = ParseObject(run.out);
  EXPECT_EQ(Field(summary, "state"), "SUCCEEDED") << run.out;
  CommandResult got = Cli({"gradsync", "get", Field(summary, "id"), "-o", "json"});
  EXPECT_NE(got.out.find(root + "/project/corpus/*.txt"), std::string::npos) << got.out;

  // From a directory outside the data root, the same spec is refused, naming the root.
  const std::string elsewhere = fs::canonical(MakeTempDir()).string();
  fs::create_directories(elsewhere + "/corpus");
  fs::copy_file(root + "/project/corpus/lines.txt", elsewhere + "/corpus/lines.txt");
  CommandResult outside = RunIn(elsewhere, With({"gradsync", "submit", root + "/project/job.yaml"}, conn_));
  EXPECT_EQ(outside.exit_code, 2) << outside.out << outside.err;
  EXPECT_NE(outside.err.find(elsewhere + "/corpus/*.txt"), std::string::npos) << outside.err;
  EXPECT_NE(outside.err.find(root), std::string::npos) << outside.err;
}

// The lines of `text` that contain `needle`.
int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) n += absl::StrContains(line, needle) ? 1 : 0;
  return n;
}

std::vector<std::string> SortedLines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  std::sort(lines.begin(), lines.end());
  return lines;
}

// gradsync logs: a running job's lines followed to its end over gRPC, the same through REST and
// for one rank, and from the workers' files once the cluster is gone.
TEST_F(CliWorkflow, LogsFollowARunningJobThroughTheCoordinatorAndOutliveTheCluster) {
  Up({"--workers", "2", "--no-cpu-binding"});
  CommandResult submitted = Cli({"gradsync", "submit", ExamplePath("mlp.yaml"), "--set", "training.maxSteps=3000",
                                 "--set", "training.epochs=30", "--set", "training.logEvery=100", "-o", "name"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job(absl::StripAsciiWhitespace(submitted.out));
  CommandResult followed;
  std::thread follow([&] { followed = Cli({"gradsync", "logs", job, "--follow"}); });
  follow.join();
  ASSERT_EQ(followed.exit_code, 0) << followed.err;
  // It ended with the job: both ranks' whole generation is there, once.
  EXPECT_EQ(Field(ParseObject(Cli({"gradsync", "get", job, "-o", "json"}).out), "state"), "SUCCEEDED");
  for (const std::string rank : {"0", "1"}) {
    EXPECT_EQ(CountLines(followed.out, "] assigned rank " + rank + "/2 of job"), 1) << followed.out;
    EXPECT_GT(CountLines(followed.out, " r" + rank + " g1 "), 2) << followed.out;
  }
  EXPECT_EQ(CountLines(followed.out, "] finished: 3000 steps"), 2) << followed.out;
  EXPECT_EQ(CountLines(followed.out, "] step 3000/3000"), 1) << followed.out;
  CommandResult all = Cli({"gradsync", "logs", job});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out, followed.out) << "following missed or repeated lines";

  const std::map<std::string, std::string> endpoints = ParseFlatJson(ReadFile(state_ + "/endpoints.json"));
  CommandResult rest = RunBinary({"gradsync", "logs", job, "--address", "http://" + endpoints.at("rest"),
                                  "--token-file", state_ + "/tokens/auth.token"});
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  EXPECT_EQ(rest.out, all.out);
  CommandResult one = Cli({"gradsync", "logs", job, "--rank", "1"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_GT(CountLines(one.out, " r1 g1 "), 2);
  EXPECT_EQ(CountLines(one.out, " r0 "), 0) << one.out;
  CommandResult unknown = Cli({"gradsync", "logs", "jobs/none-such"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(unknown.err, "NOT_FOUND")) << unknown.err;

  ASSERT_EQ(RunBinary({"gradsync", "local", "down", "--state-dir", state_}).exit_code, 0);
  CommandResult files = RunBinary({"gradsync", "logs", job, "--state-dir", state_});
  ASSERT_EQ(files.exit_code, 0) << files.err;
  EXPECT_EQ(SortedLines(files.out), SortedLines(all.out)) << "the files hold what the coordinator held";
  state_.clear();
}

}  // namespace
}  // namespace gradsync::testing

// Paths with real processes. A coordinator started with --data_root and --artifact_root refuses,
// through the CLI, a job that would read a file outside the data root (by its absolute path,
// through "..", through a symlink, through a glob) naming the field, the path and the root and
// never the file's contents, and it keeps the resolved path of a job it accepts. `gradsync run`
// trains on text beside its spec, as `make demo` does, and the weights land in
// <state-dir>/artifacts/<job id>/weights.bin.
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kSecret[] = "root:$6$not-for-your-eyes";

// A gpt-tiny job on byte text: a few short steps on one CPU worker.
void WriteTextSpec(const std::string& path, const std::string& data) {
  std::ofstream(path) << "name: text\nmodel: {preset: gpt-tiny, device: cpu}\ndata: {text: {paths: [\"" << data
                      << "\"]}}\ntraining: {worldSize: 1, microBatch: 2, maxSteps: 3, logEvery: 1}\n";
}

void WriteText(const fs::path& path) {
  std::ofstream out(path);
  for (int i = 0; i < 40; ++i) out << "Every line of this licence may be copied and shared as it is.\n";
}

class PathConfinement : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty());
    fs::create_directories(dir_ + "/data");
    fs::create_directories(dir_ + "/etc");
    WriteText(dir_ + "/data/corpus.txt");
    std::ofstream(dir_ + "/etc/shadow") << kSecret;
    children_.Start({"gradsync-coordinator", "--listen=127.0.0.1:0",
                     "--rest_listen=", "--metrics_listen=", "--artifact_root=" + dir_ + "/artifacts",
                     "--data_root=" + dir_ + "/data", "--endpoints_file=" + dir_ + "/coordinator.json"},
                    dir_ + "/coordinator.log");
    address_ = WaitForEndpoints(dir_ + "/coordinator.json")["grpc"];
    ASSERT_FALSE(address_.empty()) << ReadFile(dir_ + "/coordinator.log");
    root_ = fs::weakly_canonical(dir_ + "/data").string();
  }

  // `gradsync submit` of a text job reading `data`.
  CommandResult Submit(const std::string& data) const {
    const std::string spec = dir_ + "/job.yaml";
    WriteTextSpec(spec, data);
    return RunBinary({"gradsync", "submit", spec, "--address", address_});
  }

  // The submission must be refused with `problem`, and without the secret.
  void ExpectRefused(const std::string& data, const std::string& problem) const {
    CommandResult r = Submit(data);
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_NE(r.err.find(problem), std::string::npos) << r.err;
    EXPECT_EQ((r.out + r.err).find(kSecret), std::string::npos) << r.err;
  }

  Children children_;
  std::string dir_, address_, root_;
};

TEST_F(PathConfinement, DataOutsideTheDataRootIsRefusedByFieldPathAndRoot) {
  const std::string shadow = dir_ + "/etc/shadow";
  ExpectRefused(shadow, "data.text.paths[0]: \"" + shadow + "\" lies outside the data root " + root_);
  ExpectRefused("../etc/shadow", "data.text.paths[0]: \"../etc/shadow\" lies outside the data root " + root_);
  fs::create_directory_symlink(dir_ + "/etc", dir_ + "/data/escape");
  ExpectRefused("escape/shadow", "\"escape/shadow\" lies outside the data root");
  fs::create_symlink(dir_ + "/etc/shadow", dir_ + "/data/shadow.txt");
  ExpectRefused("*.txt", "matches \"" + root_ + "/shadow.txt\", which resolves outside the data root");
}

TEST_F(PathConfinement, AJobInsideTheDataRootKeepsItsResolvedPath) {
  CommandResult r = Submit("corpus.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string job = r.out.substr(0, r.out.find('\n'));
  CommandResult got = RunBinary({"gradsync", "get", job, "-o", "json", "--address", address_});
  EXPECT_NE(got.out.find("\"" + root_ + "/corpus.txt\""), std::string::npos) << got.out;
}

TEST(PathConfinementRun, RunTrainsOnTextBesideItsSpecAndWritesTheWeightsInTheJobsDirectory) {
  const std::string dir = MakeTempDir();
  fs::create_directories(dir + "/texts");
  WriteText(dir + "/texts/GPL-3");
  WriteText(dir + "/texts/MIT-0");
  WriteTextSpec(dir + "/job.yaml", dir + "/texts/*-*");
  const std::string state = dir + "/state";
  CommandResult run = RunBinary({"gradsync", "run", dir + "/job.yaml", "-o", "json", "--state-dir", state});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto summary = ParseFlatJson(run.out);
  EXPECT_EQ(summary["state"], "SUCCEEDED");
  EXPECT_EQ(summary["weightsPath"],
            fs::weakly_canonical(state).string() + "/artifacts/" + summary["id"] + "/weights.bin")
      << run.out;
  EXPECT_TRUE(fs::exists(summary["weightsPath"]));

  CommandResult refused = RunBinary(
      {"gradsync", "run", dir + "/job.yaml", "--state-dir", dir + "/refused", "--set", "checkpoint.dir=/etc/x"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("checkpoint.dir: must be the name of a subdirectory"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace gradsync::testing

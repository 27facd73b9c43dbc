// A run that outlived its job, continued as a new job (training.resumeFrom) with real processes: a
// job cancelled partway, then continued at the same world size, ends with weights bitwise equal to
// one uninterrupted run of the same length (step, learning-rate schedule, AdamW state and data
// position all carried); continued at another world size, it trains the exact next samples (the
// workers' sample audit: the cancelled job's samples and the continuation's cover the epoch once).
// A continuation of another model is refused, naming the field.
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli_harness.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kSamples = 4096;  // 64 steps an epoch at 2 ranks of 32, about 43 at 3
// Long enough (a few ms a step with 1024-wide layers) that a cancel lands well before the end.
constexpr int kSteps = 600;

bool Has(const std::string& out, const std::string& what) { return out.find(what) != std::string::npos; }

// The value of "key": "value" in a job's JSON, the first one.
std::string Field(const std::string& json, const std::string& key) {
  const std::string quoted = absl::StrCat("\"", key, "\": \"");
  const size_t at = json.find(quoted);
  if (at == std::string::npos) return "";
  const size_t begin = at + quoted.size();
  return json.substr(begin, json.find('"', begin) - begin);
}

// The step of the newest committed checkpoint in a job's JSON (its "checkpoints" list); 0 without.
int64_t LastCheckpointStep(const std::string& json) {
  const size_t list = json.find("\"checkpoints\": [");
  if (list == std::string::npos) return 0;
  const std::string checkpoints = json.substr(list, json.find("\n  ]", list) - list);
  const size_t at = checkpoints.rfind("\"step\": \"");
  int64_t step = 0;
  if (at != std::string::npos) (void)absl::SimpleAtoi(checkpoints.substr(at + 9, checkpoints.find('"', at + 9) - at - 9), &step);
  return step;
}

// Every sample a job's ranks trained in `epoch` over steps [first, last], from the workers' audit
// logs (<job>.g<G>.r<R>.samples lines: step, epoch, cursor, samples...).
std::multiset<int64_t> SamplesOf(const std::string& dir, const std::string& job_id, int epoch, int64_t first,
                                 int64_t last) {
  std::multiset<int64_t> seen;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.path().filename().string().starts_with(job_id + ".g")) continue;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      int64_t step = 0, cursor = 0;
      int e = 0;
      fields >> step >> e >> cursor;
      if (e != epoch || step < first || step > last) continue;
      for (int64_t i; fields >> i;) seen.insert(i);
    }
  }
  return seen;
}

class ContinueRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    samples_ = dir_ + "/samples";
    address_ = absl::StrCat("127.0.0.1:", FreePort());
    children_.Start(CoordinatorArgs(address_, dir_, {"--state_dir=" + dir_ + "/state"}), dir_ + "/coordinator.log");
    for (const char* name : {"a", "b", "c"}) {
      children_.Start(WorkerArgs(address_, {absl::StrCat("--name=", name), "--sample_log_dir=" + samples_}),
                      absl::StrCat(dir_, "/", name, ".log"));
    }
    ASSERT_EQ(RunBinary({"gradsync", "healthcheck", address_, "--timeout", "20"}).exit_code, 0);
  }

  // `gradsync submit mlp.yaml` of kSteps steps with `extra` arguments; the job's name.
  std::string Submit(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address_,
                                     "--set", absl::StrCat("training.maxSteps=", kSteps), "--set", "training.epochs=0",
                                     "--set", absl::StrCat("data.synthetic.numSamples=", kSamples),
                                     "--set", "model.mlp.hiddenDims=[1024, 1024]",
                                     "--set", "checkpoint.everySteps=1000", "--set", "training.logEvery=5"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CommandResult r = RunBinary(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }
  std::string Ended(const std::string& job) {
    return WaitForJob(address_, job, absl::Seconds(120), [](const std::string& out) {
      return Has(out, "\"SUCCEEDED\"") || Has(out, "\"FAILED\"") || Has(out, "\"CANCELLED\"");
    });
  }
  // A job cancelled a few dozen steps in: its name and the step of the checkpoint it left.
  std::pair<std::string, int64_t> Cancelled() {
    const std::string job = Submit({});
    WaitForJob(address_, job, absl::Seconds(60), [](const std::string& out) { return ProgressStep(out) >= 20; });
    EXPECT_EQ(RunBinary({"gradsync", "cancel", job, "--address", address_}).exit_code, 0);
    const std::string done = Ended(job);
    EXPECT_TRUE(Has(done, "\"CANCELLED\"")) << done;
    const int64_t step = LastCheckpointStep(done);
    EXPECT_GT(step, 0) << "no checkpoint committed at the cancel: " << done;
    EXPECT_LT(step, kSteps) << "the job ended before it was cancelled: " << done;
    return {job, step};
  }

  std::string dir_, samples_, address_;
  Children children_;
};

TEST_F(ContinueRun, AContinuedRunEndsAsTheUninterruptedOneAndAtAnotherWorldSizeTrainsTheNextSamples) {
  const std::string whole = Ended(Submit({}));
  ASSERT_TRUE(Has(whole, "\"SUCCEEDED\"")) << whole;
  const std::string digest = Field(whole, "paramDigest");
  ASSERT_FALSE(digest.empty()) << whole;

  const auto [cancelled, at] = Cancelled();
  const std::string continued = Ended(Submit({"--resume-from", cancelled}));
  ASSERT_TRUE(Has(continued, "\"SUCCEEDED\"")) << continued << ReadFile(dir_ + "/a.log");
  EXPECT_TRUE(Has(continued, absl::StrCat("continues ", cancelled, " from its checkpoint at step ", at))) << continued;
  EXPECT_EQ(Field(continued, "paramDigest"), digest) << "the continued run differs from the uninterrupted one";
  EXPECT_TRUE(Has(continued, absl::StrCat("\"globalStep\": \"", kSteps, "\""))) << continued;

  // At 3 ranks: the epoch the cancel cut is trained once, the first part by the cancelled job.
  const auto [cut, step] = Cancelled();
  const std::string wider = Ended(Submit({"--resume-from", cut, "--set", "training.worldSize=3"}));
  ASSERT_TRUE(Has(wider, "\"SUCCEEDED\"")) << wider;
  const std::string cut_id = cut.substr(cut.find('/') + 1), wider_id = Field(wider, "id");
  const int epoch = static_cast<int>(step / (kSamples / 64));  // 64 samples a step at 2 ranks
  std::multiset<int64_t> epoch_samples = SamplesOf(samples_, cut_id, epoch, 1, step);
  for (int64_t i : SamplesOf(samples_, wider_id, epoch, step + 1, kSteps)) epoch_samples.insert(i);
  EXPECT_EQ(static_cast<int>(epoch_samples.size()), kSamples) << "epoch " << epoch << " not trained once";
  EXPECT_EQ(std::set<int64_t>(epoch_samples.begin(), epoch_samples.end()).size(), epoch_samples.size())
      << "a sample of epoch " << epoch << " repeated across the continuation";

  // Another model cannot continue the run.
  const CommandResult refused = RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--address", address_,
                                           "--resume-from", cut, "--set", "model.mlp.hiddenDims=[64]"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_TRUE(Has(refused.err, "training.resumeFrom: model.mlp.hiddenDims differs from " + cut)) << refused.err;
}

}  // namespace
}  // namespace gradsync::testing

// The validation loss end to end with real processes: `gradsync data prepare --val-fraction`
// writes val_*.bin beside the train shards, a local cluster finds them by default, and jobs of 1
// and 3 ranks report the same validation loss, equal to one computed here from the weights file,
// one window at a time, on the same shards. The value is in the -o json summary, the job's result
// (gradsync get), the metrics endpoint and the SVG report. (The progress lines and the job's
// progress, which depend on when heartbeats fall, are tested without processes: tests/cli,
// tests/worker, tests/coordinator.)
#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/ckpt/weights_file.h"
#include "gradsync/core/rng.h"
#include "gradsync/data/token_shard.h"
#include "gradsync/nn/model.h"
#include "gradsync/v1/job.pb.h"
#include "gtest/gtest.h"
#include "http_client.h"
#include "plans.h"
#include "tokenizer_json.h"

namespace gradsync::testing {
namespace {

constexpr int kSeqLen = 32;

// A number field of a JSON object, at full precision (NaN when absent).
double JsonNumber(const std::string& json, const std::string& key) {
  google::protobuf::Struct s;
  if (!google::protobuf::util::JsonStringToMessage(json, &s).ok()) return NAN;
  auto it = s.fields().find(key);
  return it == s.fields().end() ? NAN : it->second.number_value();
}

// Text of words in a random order: something a model can learn a little of.
std::string Words(int bytes) {
  const char* words[] = {"the ", "cat ", "sat ", "on ", "a ", "mat ", "and ", "dog ", "ran ", "far. "};
  Rng rng(11);
  std::string out;
  while (static_cast<int>(out.size()) < bytes) out += words[rng.Below(10)];
  return out;
}

// The mean loss of the weights in `weights_path` over every target position of `val_files`, each
// window scored alone: nothing of the worker's validation set, partition or all-reduce.
double OneWindowAtATime(const std::string& weights_path, const std::vector<std::string>& val_files) {
  absl::StatusOr<ckpt::WeightsFile> weights = ckpt::LoadWeights(weights_path);
  EXPECT_TRUE(weights.ok()) << weights.status();
  v1::JobSpec spec;
  *spec.mutable_model() = weights->model;
  absl::StatusOr<std::unique_ptr<nn::Model>> model = gradsync::testing::ModelOf(spec);
  EXPECT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->params().size(), weights->values.size());
  std::copy(weights->values.begin(), weights->values.end(), (*model)->params().begin());
  double sum = 0;
  int64_t count = 0;
  for (const std::string& path : val_files) {
    absl::StatusOr<data::TokenStream> stream = data::ReadShard(path, weights->model.transformer().vocab_size());
    EXPECT_TRUE(stream.ok()) << stream.status();
    const std::vector<uint32_t> tokens = stream->ToVector();
    for (size_t start = 0; start + 1 < tokens.size(); start += kSeqLen) {
      nn::Batch b;
      b.size = 1;
      for (size_t t = start; t < std::min(start + kSeqLen, tokens.size() - 1); ++t) {
        b.tokens.push_back(static_cast<int32_t>(tokens[t]));
        b.targets.push_back(static_cast<int32_t>(tokens[t + 1]));
      }
      absl::StatusOr<nn::LossSum> loss = (*model)->Evaluate(b);
      EXPECT_TRUE(loss.ok()) << loss.status();
      sum += loss->sum;
      count += loss->count;
    }
  }
  return sum / static_cast<double>(count);
}

TEST(Validation, OneAndThreeRanksReportTheLossOfTheWeightsOnTheValShards) {
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/text.txt") << Words(40000);
  CommandResult prepared = RunBinary({"gradsync", "data", "prepare", dir + "/text.txt", "-o", dir + "/shards",
                                      "--val-fraction", "0.1", "--shard-tokens", "2500"});
  ASSERT_EQ(prepared.exit_code, 0) << prepared.err;
  const std::vector<std::string> val_files = {dir + "/shards/val_000000.bin", dir + "/shards/val_000001.bin"};
  for (const auto& f : val_files) ASSERT_TRUE(std::filesystem::exists(f)) << prepared.out;

  const std::string cluster = dir + "/cluster";
  CommandResult up =
      RunBinary({"gradsync", "local", "up", "--workers", "3", "--state-dir", cluster, "--data-root", dir + "/shards"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  // Down whatever happens: the cluster's daemons would otherwise outlive the test.
  absl::Cleanup down = [&] { RunBinary({"gradsync", "local", "down", "--state-dir", cluster}); };
  const std::map<std::string, std::string> endpoints = ParseFlatJson(up.out);
  std::string token = ReadFile(cluster + "/tokens/metrics.token");
  token = token.substr(0, token.find('\n'));

  std::map<int, double> by_world;
  std::map<int, std::vector<float>> weights;
  for (int world : {1, 3}) {
    // A learning rate of 1e-30 moves no weight (it is far below half an ulp of any of them), so
    // both jobs evaluate the same model and only the evaluation differs between world sizes.
    CommandResult job = RunBinary(
        {"gradsync",
         "submit",
         ExamplePath("gpt-tiny-shards.yaml"),
         "--state-dir",
         cluster,
         "--set",
         "data.shards.paths=[\"" + dir + "/shards/train_*.bin\"]",
         "--set",
         absl::StrCat("model.transformer={layers: 1, heads: 2, width: 32, mlpWidth: 64, seqLen: ", kSeqLen, "}"),
         "--set",
         absl::StrCat("training.worldSize=", world),
         "--set",
         "training.microBatch=4",
         "--set",
         "training.maxSteps=4",
         "--set",
         "training.epochs=0",
         "--set",
         "training.evalEvery=2",
         "--set",
         "training.lr=1e-30",
         "--wait",
         "-o",
         "json"});
    ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
    const std::map<std::string, std::string> summary = ParseFlatJson(job.out);
    const double loss = JsonNumber(job.out, "validationLoss");
    ASSERT_TRUE(std::isfinite(loss)) << "the -o json summary has validationLoss: " << job.out;
    by_world[world] = loss;

    // The weights, scored here on the same shards.
    const double want = OneWindowAtATime(summary.at("weightsPath"), val_files);
    EXPECT_NEAR(loss, want, 1e-5 * want) << "world size " << world << " (fp32 forward on other shapes)";
    weights[world] = ckpt::LoadWeights(summary.at("weightsPath"))->values;

    // The job's progress (REST/gRPC), the metrics endpoint and the SVG report.
    const std::string id = summary.at("id");
    CommandResult got = RunBinary({"gradsync", "get", id, "--state-dir", cluster, "-o", "json"});
    v1::Job stored;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(got.out, &stored).ok()) << got.out;
    EXPECT_EQ(stored.result().validation_loss(), loss);
    EXPECT_EQ(std::vector<std::string>(stored.spec().data().validation().paths().begin(),
                                       stored.spec().data().validation().paths().end()),
              std::vector<std::string>{dir + "/shards/val_*.bin"})
        << "the job names the val shards found beside its train shards";
    const std::string metrics_http = endpoints.at("metricsHttp");
    // Step reports reach the metrics service on their own schedule, so the job may have ended
    // before its last report is in: the series must appear within a few report intervals.
    const std::string series = absl::StrCat("gradsync_validation_loss{training_job=\"", id, "\"} ");
    HttpResponse scrape;
    size_t at = std::string::npos;
    for (const absl::Time deadline = absl::Now() + absl::Seconds(30); at == std::string::npos && absl::Now() < deadline;
         absl::SleepFor(absl::Milliseconds(200))) {
      scrape = HttpRequest("GET", std::stoi(metrics_http.substr(metrics_http.rfind(':') + 1)), "/metrics",
                           {{"Authorization", "Bearer " + token}});
      at = scrape.body.find(series);
    }
    ASSERT_NE(at, std::string::npos) << scrape.body;
    double scraped = NAN;
    ASSERT_TRUE(absl::SimpleAtod(
        scrape.body.substr(at + series.size(), 40).substr(0, scrape.body.substr(at + series.size(), 40).find('\n')),
        &scraped));
    EXPECT_NEAR(scraped, loss, 1e-12 * loss);
    const std::string svg = dir + "/" + id + ".svg";
    CommandResult report = RunBinary({"gradsync", "report", id, "-o", svg, "--state-dir", cluster});
    ASSERT_EQ(report.exit_code, 0) << report.err;
    const std::string picture = ReadFile(svg);
    EXPECT_NE(picture.find("validation (whole set)"), std::string::npos) << "the legend names the series";
    EXPECT_NE(picture.find("<circle"), std::string::npos) << "a marker at each evaluation";
  }
  double moved = 0;
  ASSERT_EQ(weights[1].size(), weights[3].size());
  for (size_t i = 0; i < weights[1].size(); ++i) {
    moved = std::max(moved, static_cast<double>(std::fabs(weights[1][i] - weights[3][i])));
  }
  EXPECT_LT(moved, 1e-20) << "the premise: both jobs hold the same model";
  // Every batch of windows is the same at both world sizes (ddp/eval_partition.h); only the order
  // of the double additions of the batches' and the ranks' sums differs: 1e-12 relative is
  // thousands of ulps of room.
  EXPECT_NEAR(by_world[1], by_world[3], 1e-12 * by_world[1]);
}

// ddp.sharding "full" on a transformer with a validation set, 3 ranks: each layer gathered from
// its owners before it computes (the tied token embedding at both ends), the evaluation's batches
// uneven across ranks (a rank with fewer still joins every gather), and training, clipping and
// evaluation all bit for bit what unsharded training gives.
TEST(Validation, FullyShardedRanksTrainAndEvaluateBitForBitLikeUnsharded) {
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/text.txt") << Words(30000);
  CommandResult prepared = RunBinary({"gradsync", "data", "prepare", dir + "/text.txt", "-o", dir + "/shards",
                                      "--val-fraction", "0.12", "--shard-tokens", "4000"});
  ASSERT_EQ(prepared.exit_code, 0) << prepared.err;
  std::map<std::string, std::vector<float>> weights;
  std::map<std::string, double> losses;
  for (const std::string sharding : {"none", "full"}) {
    CommandResult job = RunBinary(
        {"gradsync",
         "run",
         ExamplePath("gpt-tiny-shards.yaml"),
         "--state-dir",
         dir + "/" + sharding,
         "--workers",
         "3",
         "--set",
         "data.shards.paths=[\"" + dir + "/shards/train_*.bin\"]",
         "--set",
         absl::StrCat("model.transformer={layers: 2, heads: 2, width: 32, mlpWidth: 64, seqLen: ", kSeqLen, "}"),
         "--set",
         "training.worldSize=3",
         "--set",
         "training.microBatch=4",  // about 113 windows of validation: 29 batches of 4, 9 on rank 0
         "--set",
         "training.gradAccumSteps=2",
         "--set",
         "training.maxSteps=6",
         "--set",
         "training.epochs=0",
         "--set",
         "training.evalEvery=3",
         "--set",
         "training.gradClip=0.05",
         "--set",
         "ddp.sharding=" + sharding,
         "-o",
         "json"});
    ASSERT_EQ(job.exit_code, 0) << sharding << ": " << job.out
                                << job.err.substr(job.err.size() > 4000 ? job.err.size() - 4000 : 0);
    losses[sharding] = JsonNumber(job.out, "validationLoss");
    ASSERT_TRUE(std::isfinite(losses[sharding])) << job.out;
    weights[sharding] = ckpt::LoadWeights(ParseFlatJson(job.out).at("weightsPath"))->values;
  }
  ASSERT_EQ(weights["full"].size(), weights["none"].size());
  for (size_t i = 0; i < weights["none"].size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(weights["full"][i]), std::bit_cast<uint32_t>(weights["none"][i]))
        << "parameter element " << i;
  }
  EXPECT_EQ(losses["full"], losses["none"]);
}

// A vocabulary past 65,536 ids (Llama 3's, Qwen2's) end to end: `data prepare` writes llm.c's
// uint32 shards, and two ranks train on them and report the validation loss of the weights they
// end with, scored here from the shards' own wide ids.
TEST(Validation, AVocabularyPastUint16PreparesUint32ShardsThatTwoRanksTrainOn) {
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/tokenizer.json") << TokenizerJson(70000);  // "<|end|>" is id 70000
  std::string text;
  Rng rng(5);
  while (text.size() < 40000)
    absl::StrAppend(&text, "he", std::string(1, static_cast<char>('a' + rng.Below(4))), "<|end|>");
  std::ofstream(dir + "/text.txt") << text;
  CommandResult prepared = RunBinary({"gradsync", "data", "prepare", dir + "/text.txt", "-o", dir + "/shards",
                                      "--tokenizer", dir + "/tokenizer.json", "--val-fraction", "0.1"});
  ASSERT_EQ(prepared.exit_code, 0) << prepared.err;
  EXPECT_NE(prepared.out.find("of uint32 tokens"), std::string::npos) << prepared.out;
  const std::string val = dir + "/shards/val_000000.bin";
  absl::StatusOr<data::TokenStream> val_tokens = data::ReadShard(val, 70001);
  ASSERT_TRUE(val_tokens.ok()) << val_tokens.status();
  ASSERT_EQ(val_tokens->width(), data::TokenWidth::kUint32);
  const std::vector<uint32_t> ids = val_tokens->ToVector();
  EXPECT_NE(std::find(ids.begin(), ids.end(), 70000u), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), 256u), ids.end());  // "he"

  CommandResult job =
      RunBinary({"gradsync",
                 "run",
                 ExamplePath("gpt-tiny-shards.yaml"),
                 "--state-dir",
                 dir + "/state",
                 "--workers",
                 "2",
                 "--set",
                 "data.shards.paths=[\"" + dir + "/shards/train_*.bin\"]",
                 "--set",
                 absl::StrCat("model.transformer={layers: 1, heads: 2, width: 32, mlpWidth: 64, seqLen: ", kSeqLen,
                              ", vocabSize: 70001}"),
                 "--set",
                 "training.microBatch=4",
                 "--set",
                 "training.maxSteps=30",
                 "--set",
                 "training.epochs=0",
                 "--set",
                 "training.evalEvery=30",
                 "--set",
                 "training.lr=0.01",
                 "-o",
                 "json"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  const double loss = JsonNumber(job.out, "validationLoss");
  ASSERT_TRUE(std::isfinite(loss)) << "the -o json summary has validationLoss: " << job.out;
  const double want = OneWindowAtATime(ParseFlatJson(job.out).at("weightsPath"), {val});
  EXPECT_NEAR(loss, want, 1e-5 * want);
  // Untrained, every id is about as likely: ln(70001) = 11.16. The text is nearly periodic.
  EXPECT_LT(loss, 0.5 * std::log(70001.0)) << "the ranks learned nothing of the wide ids";
}

}  // namespace
}  // namespace gradsync::testing

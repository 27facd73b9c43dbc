// Supervised fine-tuning data end to end, with real processes: a chat JSONL prepared into masked
// shards (`gradsync data prepare --chat`) and trained by two ranks; the job's loss at its first step
// equals the masked mean a single process computes directly on the same model and windows: the sum
// of the cross-entropy over the targets the masks keep, over their count, whichever rank holds
// them.
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli_harness.h"
#include "gradsync/data/dataset.h"
#include "gradsync/kernels/cpu/softmax_xent.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"
#include "plans.h"

namespace gradsync::testing {
namespace {

constexpr int kSeqLen = 128;  // gpt-tiny's: every conversation and its reply fit a window
constexpr int kConversations = 8;  // one a window: the first step of 2 ranks x 4 reads them all

TEST(MaskedChat, TwoRanksTrainOnTheMaskedMeanAProcessComputesDirectly) {
  const std::string dir = MakeTempDir();
  {
    std::ofstream chat(dir + "/chat.jsonl");
    for (int i = 0; i < kConversations; ++i) {
      chat << R"({"conversations": [{"role": "user", "content": "what is )" << i << " plus " << i
           << R"(?"}, {"role": "assistant", "content": ")" << 2 * i << std::string(i, '!') << R"("}]})" << "\n";
    }
  }
  const CommandResult prepared = RunBinary({"gradsync", "data", "prepare", dir + "/chat.jsonl", "-o", dir + "/sft",
                                            "--chat", "--seq-len", absl::StrCat(kSeqLen), "--no-pack"});
  ASSERT_EQ(prepared.exit_code, 0) << prepared.err;
  ASSERT_TRUE(std::filesystem::exists(dir + "/sft/train_000000.mask")) << prepared.out;

  const std::string shards = dir + "/sft/train_*.bin";
  const CommandResult run = RunBinary(
      {"gradsync", "run", ExamplePath("gpt-tiny-shards.yaml"), "-o", "json", "--state-dir", dir + "/state", "--workers",
       "2", "--set", absl::StrCat("data.shards.paths=[\"", shards, "\"]"), "--set",
       absl::StrCat("model.transformer.seqLen=", kSeqLen), "--set", "training.maxSteps=1", "--set", "training.epochs=0",
       "--set", "training.microBatch=4", "--set", "data.validation.disabled=true"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  double job_loss = 0;
  ASSERT_TRUE(absl::SimpleAtod(ParseFlatJson(run.out)["initialLoss"], &job_loss)) << run.out;

  // The same spec in this process: the model from the job's seed, every window, the masked mean.
  v1::JobSpec spec;
  spec.mutable_model()->set_preset("gpt-tiny");
  spec.mutable_model()->mutable_transformer()->set_seq_len(kSeqLen);
  spec.mutable_data()->mutable_shards()->add_paths(shards);
  spec.mutable_training()->set_seed(1);  // gpt-tiny-shards.yaml's
  spec::FillDefaults(&spec);
  absl::StatusOr<std::unique_ptr<nn::Model>> model = ModelOf(spec);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::unique_ptr<data::Dataset>> dataset = DatasetOf(spec);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ((*dataset)->size(), kConversations);
  ASSERT_TRUE((*dataset)->masked());
  std::vector<int64_t> all(kConversations);
  for (int i = 0; i < kConversations; ++i) all[i] = i;
  nn::Batch batch;
  ASSERT_TRUE((*dataset)->Fill(all, &batch).ok());
  int64_t kept = 0;
  for (const int32_t t : batch.targets) kept += t != kernels::cpu::kIgnoreIndex;
  ASSERT_GT(kept, 0);
  ASSERT_LT(kept, kConversations * kSeqLen / 2) << "the masks keep the replies only";
  absl::StatusOr<nn::LossSum> reference = (*model)->Evaluate(batch);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_EQ(reference->count, kept);
  const double mean = reference->sum / static_cast<double>(reference->count);
  // fp32 logits summed in another order on two ranks: a few ulps of the loss.
  EXPECT_NEAR(job_loss, mean, 1e-5 * mean) << "the job's first loss is not the masked mean over both ranks";
}

}  // namespace
}  // namespace gradsync::testing

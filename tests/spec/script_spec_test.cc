// Script jobs (JobSpec.script): their defaults, their rules, and the YAML that writes them.
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/spec/job_spec.h"
#include "gradsync/spec/placement.h"
#include "gtest/gtest.h"

namespace gradsync::spec {
namespace {

using ::testing::HasSubstr;

constexpr char kScript[] = R"(
name: sft
script:
  command: [python3, train_full_sft.py, --epochs, "2"]
  env: {HF_HOME: /data/hf, TOKENIZERS_PARALLELISM: "false"}
training: {worldSize: 4, maxRestarts: 2}
)";

// The message of normalizing kScript with `overrides`; it must fail.
std::string Refusal(const std::vector<std::string>& overrides) {
  absl::StatusOr<v1::JobSpec> parsed = ParseJobSpec(kScript, "test", overrides);
  if (!parsed.ok()) return std::string(parsed.status().message());
  absl::StatusOr<v1::JobSpec> normalized = Normalize(*parsed);
  EXPECT_EQ(normalized.status().code(), absl::StatusCode::kInvalidArgument) << ToJson(*parsed);
  return std::string(normalized.status().message());
}

TEST(ScriptSpec, ParsesAndTakesOnlyTheDefaultsThatApply) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(kScript, "test", {});
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<v1::JobSpec> normalized = Normalize(*spec);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  const v1::ScriptSpec& script = normalized->script();
  EXPECT_THAT(script.command(), ::testing::ElementsAre("python3", "train_full_sft.py", "--epochs", "2"));
  EXPECT_EQ(script.env().at("HF_HOME"), "/data/hf");
  EXPECT_EQ(script.env().at("TOKENIZERS_PARALLELISM"), "false");
  EXPECT_EQ(script.working_dir(), ".");
  EXPECT_EQ(script.stop_grace_seconds(), 15);
  EXPECT_EQ(normalized->training().world_size(), 4);
  EXPECT_EQ(normalized->training().min_workers(), 4);
  EXPECT_EQ(normalized->training().max_workers(), 4);
  EXPECT_EQ(MaxRestarts(normalized->training()), 2);
  // Nothing of the built-in models: no preset, no data, no schedule.
  EXPECT_FALSE(normalized->has_model());
  EXPECT_FALSE(normalized->has_data());
  EXPECT_FALSE(normalized->training().has_lr());
  EXPECT_FALSE(normalized->training().has_micro_batch());
  EXPECT_EQ(normalized->ddp().backend(), "auto");
  EXPECT_FALSE(normalized->ddp().has_bucket_cap_mb());
  // Normalizing twice changes nothing.
  absl::StatusOr<v1::JobSpec> again = Normalize(*normalized);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*again, *normalized));
}

TEST(ScriptSpec, RefusesWhatOnlyTheBuiltInModelsRead) {
  EXPECT_THAT(Refusal({"model.preset=gpt2-124m"}), HasSubstr("model: must not be set with script"));
  EXPECT_THAT(Refusal({"data.synthetic.numSamples=10"}), HasSubstr("data: must not be set with script"));
  EXPECT_THAT(Refusal({"training.lr=0.01"}),
              HasSubstr("training.lr: is the script's own choice; a script job sets only"));
  EXPECT_THAT(Refusal({"training.microBatch=8"}), HasSubstr("training.microBatch"));
  EXPECT_THAT(Refusal({"ddp.ignoreParams=[freqs_cos]"}),
              HasSubstr("ddp.ignoreParams: is the script's own choice (DistributedDataParallel's arguments, "
                        "model._ddp_params_and_buffers_to_ignore)"));
  EXPECT_THAT(Refusal({"ddp.sharding=full"}), HasSubstr("ddp.sharding"));
  EXPECT_THAT(Refusal({"checkpoint.everySteps=100"}), HasSubstr("checkpoint.everySteps: a script saves"));
}

TEST(ScriptSpec, RefusesABadCommandDirectoryOrEnvironment) {
  EXPECT_THAT(Refusal({"script.command=[]"}), HasSubstr("script.command: must name the program to run"));
  EXPECT_THAT(Refusal({"script.command=[\"\"]"}), HasSubstr("script.command[0]: must name a program"));
  EXPECT_THAT(Refusal({"script.workingDir=runs/*"}), HasSubstr("script.workingDir: must name one directory"));
  EXPECT_THAT(Refusal({"script.stopGraceSeconds=0"}), HasSubstr("script.stopGraceSeconds"));
  EXPECT_THAT(Refusal({"script.env={RANK: \"3\"}"}), HasSubstr("script.env.RANK: is set by the worker for every rank"));
  EXPECT_THAT(Refusal({"script.env={MASTER_PORT: \"1\"}"}), HasSubstr("script.env.MASTER_PORT"));
  EXPECT_THAT(Refusal({"script.env={GRADSYNC_TOKEN: x}"}), HasSubstr("script.env.GRADSYNC_TOKEN"));
  EXPECT_THAT(Refusal({"script.env={\"1BAD\": x}"}), HasSubstr("script.env.1BAD: names an environment variable"));
  EXPECT_THAT(Refusal({"script.env=[a, b]"}), HasSubstr("script.env: expected a map of names to values"));
  EXPECT_THAT(Refusal({"script.env={A: {b: c}}"}), HasSubstr("script.env.A: expected a value"));
}

TEST(ScriptSpec, HasNoModelPlanAndIsPlacedOnTheWorkersDevices) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(kScript, "test", {});
  ASSERT_TRUE(spec.ok());
  absl::StatusOr<v1::JobSpec> normalized = Normalize(*spec);
  ASSERT_TRUE(normalized.ok());
  EXPECT_EQ(PlanModel(*normalized).status().code(), absl::StatusCode::kFailedPrecondition);
  v1::Device cpu;
  cpu.set_kind(v1::Device::CPU);
  v1::Device gpu0, gpu1;
  gpu0.set_kind(v1::Device::CUDA);
  gpu0.set_gpu_uuid("GPU-0");
  gpu1 = gpu0;
  gpu1.set_gpu_index(1);
  gpu1.set_gpu_uuid("GPU-1");
  absl::StatusOr<std::vector<v1::Placement>> on_cpus =
      PlaceScriptRanks(*normalized, {{"w0", "h", cpu}, {"w1", "h", cpu}});
  ASSERT_TRUE(on_cpus.ok()) << on_cpus.status();
  EXPECT_EQ((*on_cpus)[0].device(), "cpu");
  EXPECT_EQ((*on_cpus)[0].backend(), "gloo");
  absl::StatusOr<std::vector<v1::Placement>> on_gpus =
      PlaceScriptRanks(*normalized, {{"w0", "h", gpu0}, {"w1", "h", gpu1}});
  ASSERT_TRUE(on_gpus.ok()) << on_gpus.status();
  EXPECT_EQ((*on_gpus)[1].device(), "cuda");
  EXPECT_EQ((*on_gpus)[1].backend(), "nccl");
}

}  // namespace
}  // namespace gradsync::spec

// ddp.ignoreParams split by what each name is: the model's buffers (a llama's RoPE tables, never
// synchronised) apart from parameter patterns, which the reducer leaves out of its buckets.
#include "gmock/gmock.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"

namespace gradsync::spec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

v1::JobSpec TinySpec(const std::string& flavour, const std::vector<std::string>& ignore) {
  v1::JobSpec spec;
  spec.mutable_model()->set_preset("gpt-tiny");
  spec.mutable_model()->mutable_transformer()->set_flavour(flavour);
  spec.mutable_data()->mutable_shards()->add_paths("train.bin");
  for (const std::string& name : ignore) spec.mutable_ddp()->add_ignore_params(name);
  FillDefaults(&spec);
  return spec;
}

// MiniMind's `_ddp_params_and_buffers_to_ignore = {"freqs_cos", "freqs_sin"}` copied into a llama
// job: both are buffers, and only the real parameter pattern reaches the reducer.
TEST(IgnorePlan, TheRopeTablesOfALlamaAreBuffersNotParameters) {
  absl::StatusOr<JobPlan> plan = PlanJob(TinySpec("llama", {"freqs_cos", "freqs_sin", "blocks.0."}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->model.BufferNames(), ElementsAre("freqs_cos", "freqs_sin"));
  EXPECT_THAT(plan->ignore.buffers, ElementsAre("freqs_cos", "freqs_sin"));
  EXPECT_THAT(plan->ignore.params, ElementsAre("blocks.0."));
  const std::string notice = IgnoredBuffersNotice(plan->ignore);
  EXPECT_THAT(notice, HasSubstr("ddp.ignoreParams: freqs_cos, freqs_sin are the model's RoPE tables"));
  EXPECT_THAT(notice, HasSubstr("never synchronises"));
}

// A gpt2 has learned positions (parameters) and no RoPE tables: the same names name nothing of
// its, and the job is refused when it is planned (at submission), not when its ranks set up.
TEST(IgnorePlan, AGpt2HasNoBuffersSoTheRopeNamesAreRefusedAtPlanning) {
  absl::StatusOr<JobPlan> plan = PlanJob(TinySpec("gpt2", {"freqs_cos"}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("ddp.ignoreParams[0]: \"freqs_cos\" names no parameter of the model"));
  EXPECT_THAT(plan.status().message(), HasSubstr("gradsync model params gpt-tiny lists them"));
}

// A slip in a parameter's name is refused naming the entry and the name it was likely meant to be;
// exact names and prefixes ending in "." of the model's real parameters pass.
TEST(IgnorePlan, AMisspelledParameterIsRefusedWithTheClosestName) {
  absl::StatusOr<JobPlan> plan = PlanJob(TinySpec("gpt2", {"lnf.weight", "blocks.1.attn.qkv.weigth"}));
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("ddp.ignoreParams[1]: \"blocks.1.attn.qkv.weigth\""));
  EXPECT_THAT(plan.status().message(), HasSubstr("did you mean blocks.1.attn.qkv.weight?"));
  EXPECT_TRUE(PlanJob(TinySpec("gpt2", {"lnf.weight", "blocks.1."})).ok());
  EXPECT_FALSE(PlanJob(TinySpec("gpt2", {"blocks.9."})).ok()) << "gpt-tiny has 4 blocks";
}

// The names ModelPlan lists are the layout's, in its order, for every preset and the mlp.
TEST(IgnorePlan, TheParameterNamesAreTheLayoutsOwn) {
  absl::StatusOr<JobPlan> plan = PlanJob(TinySpec("llama", {}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  const nn::ParamLayout layout = plan->model.Layout();
  const std::vector<std::string> names = plan->model.ParamNames();
  ASSERT_EQ(names.size(), static_cast<size_t>(layout.size()));
  EXPECT_EQ(layout.total_numel(), plan->model.NumParams());
  for (int i = 0; i < layout.size(); ++i) EXPECT_EQ(names[i], layout.param(i).name);
}

}  // namespace
}  // namespace gradsync::spec

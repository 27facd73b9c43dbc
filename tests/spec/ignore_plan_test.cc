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
  absl::StatusOr<JobPlan> plan = PlanJob(TinySpec("llama", {"freqs_cos", "freqs_sin", "layers.0."}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->model.BufferNames(), ElementsAre("freqs_cos", "freqs_sin"));
  EXPECT_THAT(plan->ignore.buffers, ElementsAre("freqs_cos", "freqs_sin"));
  EXPECT_THAT(plan->ignore.params, ElementsAre("layers.0."));
  const std::string notice = IgnoredBuffersNotice(plan->ignore);
  EXPECT_THAT(notice, HasSubstr("ddp.ignoreParams: freqs_cos, freqs_sin are the model's RoPE tables"));
  EXPECT_THAT(notice, HasSubstr("never synchronises"));
}

// A gpt2 has learned positions (parameters) and no RoPE tables: the same names are parameter
// patterns there, which the reducer refuses as matching nothing.
TEST(IgnorePlan, AGpt2HasNoBuffersSoTheNamesStayParameterPatterns) {
  absl::StatusOr<JobPlan> plan = PlanJob(TinySpec("gpt2", {"freqs_cos"}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->model.BufferNames(), IsEmpty());
  EXPECT_THAT(plan->ignore.buffers, IsEmpty());
  EXPECT_THAT(plan->ignore.params, ElementsAre("freqs_cos"));
  EXPECT_EQ(IgnoredBuffersNotice(plan->ignore), "");
}

}  // namespace
}  // namespace gradsync::spec

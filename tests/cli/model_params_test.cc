// `gradsync model params` lists ModelPlan::Layout, which builds no model: it must be the very layout
// the model CreateModel builds has, for a transformer of either flavour and for the mlp.
#include "gradsync/nn/model.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"

namespace gradsync::cli {
namespace {

nn::ModelPlan Plan(const std::string& text) {
  absl::StatusOr<v1::JobSpec> spec = spec::ParseJobSpec(text, "spec", {});
  EXPECT_TRUE(spec.ok()) << spec.status();
  spec::FillDefaults(&*spec);
  absl::StatusOr<nn::ModelPlan> plan = spec::PlanModel(*spec);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

TEST(ModelParams, TheListedLayoutIsTheBuiltModels) {
  for (const std::string text : {"model: {preset: gpt-tiny}", "model: {preset: gpt-tiny, transformer: {flavour: llama}}",
                                 "model: {preset: mlp, mlp: {hiddenDims: [16, 8]}}\n"
                                 "data: {synthetic: {numSamples: 64, inputDim: 5, numClasses: 3}}"}) {
    const nn::ModelPlan plan = Plan(text);
    const std::unique_ptr<nn::Model> model = nn::CreateModel(plan);
    EXPECT_EQ(plan.Layout().Hash(), model->layout().Hash()) << text;
    EXPECT_EQ(plan.Layout().total_numel(), plan.NumParams()) << text;
  }
}

}  // namespace
}  // namespace gradsync::cli

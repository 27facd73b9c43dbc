// A model no worker can hold is refused when the job is submitted, naming the field, the model's
// size and the budget: let through, `hiddenDims: [65536, 65536]` (4.3G parameters, 64 GiB with
// gradients and AdamW's moments) killed every worker it was scheduled on.
#include "model_budget.h"

#include <memory>

#include "absl/strings/match.h"
#include "coordinator.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

std::unique_ptr<Coordinator> NewCoordinator(int64_t max_model_bytes = kDefaultMaxModelBytes) {
  CoordinatorOptions options;
  options.max_model_bytes = max_model_bytes;
  return std::make_unique<Coordinator>(options, std::make_unique<InMemoryJobStore>());
}

v1::JobSpec Mlp(std::initializer_list<int32_t> hidden) {
  v1::JobSpec spec;
  for (int32_t width : hidden) spec.mutable_model()->mutable_mlp()->add_hidden_dims(width);
  return spec;
}

// GPT-2 124M on `ranks` ranks, sharded by `sharding`, its defaults filled.
v1::JobSpec Gpt2(const std::string& sharding, int ranks) {
  v1::JobSpec spec;
  spec.mutable_model()->set_preset("gpt2-124m");
  spec.mutable_data()->mutable_shards()->add_paths("tokens.bin");
  spec.mutable_ddp()->set_sharding(sharding);
  spec.mutable_training()->set_world_size(ranks);
  absl::StatusOr<v1::JobSpec> normalized = spec::Normalize(spec);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  return normalized.ok() ? *normalized : spec;
}

TEST(ModelBudget, AModelTooLargeForTheWorkersIsRefusedAtSubmission) {
  std::unique_ptr<Coordinator> c = NewCoordinator();
  const absl::StatusOr<v1::Job> job = c->CreateJob(Mlp({65536, 65536}));
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string m(job.status().message());
  EXPECT_TRUE(absl::StartsWith(m, "model.mlp.hiddenDims: the model's 4297850890 parameters take 64.0 GiB")) << m;
  EXPECT_TRUE(absl::StrContains(m, "over the 16.0 GiB a worker gives one job's model")) << m;
  EXPECT_TRUE(absl::StrContains(m, "--max_model_bytes")) << m;
  EXPECT_EQ(c->ListJobs(0, "")->jobs_size(), 0) << "nothing was queued";
  EXPECT_TRUE(c->CreateJob(Mlp({128, 128})).ok());
}

TEST(ModelBudget, TheTeacherOfTheSyntheticTaskCountsToo) {
  v1::JobSpec spec = Mlp({1});
  spec.mutable_data()->mutable_synthetic()->set_input_dim(65536);
  spec.mutable_data()->mutable_synthetic()->set_teacher_hidden(65536);
  const absl::Status s = NewCoordinator()->CreateJob(spec).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(s.message(),
                               "data.synthetic.teacherHidden: the synthetic task's teacher network "
                               "takes 32.0 GiB"))
      << s;
}

TEST(ModelBudget, TheFootprintIsSixteenBytesAParameter) {
  // The default student, mlp 32-128-128-10.
  absl::StatusOr<v1::JobSpec> mlp = spec::Normalize(v1::JobSpec());
  ASSERT_TRUE(mlp.ok()) << mlp.status();
  absl::StatusOr<ModelFootprint> f = FootprintOf(*spec::PlanJob(*mlp), 1);
  EXPECT_EQ(f->params, (32 * 128 + 128) + (128 * 128 + 128) + (128 * 10 + 10));
  EXPECT_EQ(f->model_bytes, 16 * f->params);
  EXPECT_EQ(f->field, "model.mlp.hiddenDims");

  const v1::JobSpec gpt2 = Gpt2("none", 1);
  f = FootprintOf(*spec::PlanJob(gpt2), 1);
  EXPECT_EQ(f->params, 124439808);
  EXPECT_EQ(f->teacher_bytes, 0);
  EXPECT_TRUE(PlanWithinBudget(gpt2, kDefaultMaxModelBytes).ok());
  EXPECT_FALSE(PlanWithinBudget(gpt2, f->model_bytes - 1).ok());

  // The operator's budget is the one applied.
  EXPECT_EQ(NewCoordinator(1 << 20)->CreateJob(*mlp).status().code(), absl::StatusCode::kOk);
  EXPECT_EQ(NewCoordinator(1 << 10)->CreateJob(v1::JobSpec()).status().code(), absl::StatusCode::kInvalidArgument);
}

// GPT-2 124M takes 1.85 GiB a rank unsharded, over a 1 GiB budget. Fully sharded over 8 ranks a
// rank holds an eighth of each state, plus its largest gate unit (the embeddings, 39.4M
// parameters) twice over, gathered, and its gradients: 0.67 GiB. Sharding the optimizer alone
// leaves 9 bytes a parameter, still over.
TEST(ModelBudget, TheBudgetFollowsTheShardingMode) {
  constexpr int64_t kBudget = int64_t{1} << 30;
  const absl::Status unsharded = PlanWithinBudget(Gpt2("none", 8), kBudget).status();
  EXPECT_EQ(unsharded.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(unsharded.message(), "model.transformer: the model's 124439808 parameters take 1.9 GiB"))
      << unsharded;
  EXPECT_EQ(NewCoordinator(kBudget)->CreateJob(Gpt2("none", 8)).status().code(), absl::StatusCode::kInvalidArgument);

  EXPECT_TRUE(PlanWithinBudget(Gpt2("full", 8), kBudget).ok());
  const ModelFootprint full = FootprintOf(*spec::PlanJob(Gpt2("full", 8)), 8);
  const int64_t shard = 124439808 / 8, embeddings = (50257 + 1024) * 768;
  EXPECT_EQ(full.model_bytes, 4 * (shard + 2 * embeddings) + 4 * (shard + embeddings) + 8 * shard);

  const absl::Status optimizer = PlanWithinBudget(Gpt2("optimizer", 8), kBudget).status();
  EXPECT_EQ(optimizer.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(optimizer.message(), "ddp.sharding \"optimizer\" over 8 ranks")) << optimizer;
  // A full job on one rank is its whole state again.
  EXPECT_FALSE(PlanWithinBudget(Gpt2("full", 1), kBudget).ok());
}

}  // namespace
}  // namespace gradsync::coordinator

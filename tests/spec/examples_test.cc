// Every job spec in examples/jobs parses and validates as the coordinator would take it, so a
// field renamed or a rule tightened cannot leave an example (or the guide that quotes it) broken.
#include <filesystem>

#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"

namespace gradsync::spec {
namespace {

TEST(Examples, EveryJobSpecParsesAndValidates) {
  int specs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(GRADSYNC_SOURCE_DIR) + "/examples/jobs")) {
    if (entry.path().extension() != ".yaml") continue;
    ++specs;
    absl::StatusOr<v1::JobSpec> spec = LoadJobSpecFile(entry.path().string());
    ASSERT_TRUE(spec.ok()) << entry.path() << ": " << spec.status();
    absl::StatusOr<v1::JobSpec> normal = Normalize(*spec);
    EXPECT_TRUE(normal.ok()) << entry.path() << ": " << normal.status();
  }
  EXPECT_GE(specs, 4);
}

// The GPU smoke test of docs/deployment.md is the job it says: GPT-2 small on shards, bf16 over NCCL.
TEST(Examples, TheGuidesGpuSmokeTestIsGpt2OnShardsOverNccl) {
  absl::StatusOr<v1::JobSpec> spec =
      LoadJobSpecFile(std::string(GRADSYNC_SOURCE_DIR) + "/examples/jobs/gpt2-124m-shards.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().preset(), "gpt2-124m");
  EXPECT_EQ(spec->model().device(), "cuda");
  EXPECT_EQ(spec->ddp().backend(), "nccl");
  EXPECT_EQ(spec->data().shards().paths_size(), 1);
}

}  // namespace
}  // namespace gradsync::spec

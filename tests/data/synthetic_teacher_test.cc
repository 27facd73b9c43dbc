#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "absl/status/status.h"
#include "gradsync/data/dataset.h"
#include "gradsync/nn/model.h"
#include "gradsync/v1/job.pb.h"
#include "gtest/gtest.h"
#include "plans.h"

namespace gradsync::data {
namespace {

// The defaults the spec library fills in.
gradsync::v1::JobSpec DefaultSpec(uint64_t seed = 1234) {
  gradsync::v1::JobSpec spec;
  gradsync::v1::SyntheticData* data = spec.mutable_data()->mutable_synthetic();
  data->set_num_samples(8192);
  data->set_input_dim(32);
  data->set_num_classes(10);
  data->set_teacher_hidden(64);
  data->set_seed(seed);
  return spec;
}

std::unique_ptr<Dataset> MustCreate(const gradsync::v1::JobSpec& spec) {
  absl::StatusOr<std::unique_ptr<Dataset>> dataset = gradsync::testing::DatasetOf(spec);
  EXPECT_TRUE(dataset.ok()) << dataset.status();
  return dataset.ok() ? *std::move(dataset) : nullptr;
}

nn::Batch FillIndices(const Dataset& dataset, std::vector<int64_t> indices) {
  nn::Batch batch;
  EXPECT_TRUE(dataset.Fill(indices, &batch).ok());
  return batch;
}

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> v(end - begin);
  std::iota(v.begin(), v.end(), begin);
  return v;
}

TEST(SyntheticTeacherTest, FillsShapes) {
  std::unique_ptr<Dataset> dataset = MustCreate(DefaultSpec());
  EXPECT_EQ(dataset->size(), 8192);
  const nn::Batch batch = FillIndices(*dataset, {0, 5, 8191});
  EXPECT_EQ(batch.size, 3);
  EXPECT_EQ(batch.feature_dim, 32);
  EXPECT_EQ(batch.features.size(), 3u * 32u);
  EXPECT_EQ(batch.targets.size(), 3u);

  const nn::Batch empty = FillIndices(*dataset, {});
  EXPECT_EQ(empty.size, 0);
  EXPECT_EQ(empty.feature_dim, 32);
  EXPECT_TRUE(empty.features.empty());
}

TEST(SyntheticTeacherTest, SamplesDependOnlyOnSeedAndIndex) {
  std::unique_ptr<Dataset> a = MustCreate(DefaultSpec()), b = MustCreate(DefaultSpec());
  const nn::Batch run = FillIndices(*a, Range(0, 10));
  const nn::Batch alone = FillIndices(*b, {7});
  EXPECT_TRUE(std::equal(alone.features.begin(), alone.features.end(), run.features.begin() + 7 * 32));
  EXPECT_EQ(alone.targets[0], run.targets[7]);

  // Refilling a used batch replaces its contents.
  nn::Batch reused = run;
  ASSERT_TRUE(a->Fill(std::vector<int64_t>{7}, &reused).ok());
  EXPECT_EQ(reused.features, alone.features);
  EXPECT_EQ(reused.targets, alone.targets);

  std::unique_ptr<Dataset> other = MustCreate(DefaultSpec(99));
  EXPECT_NE(FillIndices(*other, {7}).features, alone.features);
}

TEST(SyntheticTeacherTest, LabelsSpanTheClasses) {
  std::unique_ptr<Dataset> dataset = MustCreate(DefaultSpec());
  const nn::Batch batch = FillIndices(*dataset, Range(0, 4000));
  std::vector<int> counts(10, 0);
  for (int32_t t : batch.targets) {
    ASSERT_GE(t, 0);
    ASSERT_LT(t, 10);
    ++counts[t];
  }
  // Not degenerate: most classes occur and none dominates.
  EXPECT_GE(std::ranges::count_if(counts, [](int c) { return c > 0; }), 7);
  EXPECT_LT(*std::ranges::max_element(counts), 4000 / 3);
}

TEST(SyntheticTeacherTest, FeaturesAreStandardNormal) {
  std::unique_ptr<Dataset> dataset = MustCreate(DefaultSpec());
  const nn::Batch batch = FillIndices(*dataset, Range(100, 1100));
  double sum = 0.0, sum_sq = 0.0;
  for (float x : batch.features) {
    sum += x;
    sum_sq += double{x} * x;
  }
  const double n = static_cast<double>(batch.features.size());
  EXPECT_NEAR(sum / n, 0.0, 0.02);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.03);
}

TEST(CreateDatasetTest, RejectsMissingOrBadSource) {
  gradsync::v1::JobSpec spec;
  EXPECT_EQ(gradsync::testing::DatasetOf(spec).status(), absl::InvalidArgumentError("data: no source set"));

  spec = DefaultSpec();
  spec.mutable_data()->mutable_synthetic()->set_num_classes(1);
  absl::StatusOr<std::unique_ptr<Dataset>> dataset = gradsync::testing::DatasetOf(spec);
  EXPECT_EQ(dataset.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(dataset.status().message().find("data.synthetic.numClasses"), std::string::npos);

  spec = DefaultSpec();
  spec.mutable_data()->mutable_synthetic()->set_num_samples(0);
  EXPECT_NE(gradsync::testing::DatasetOf(spec).status().message().find("data.synthetic.numSamples"), std::string::npos);
}

}  // namespace
}  // namespace gradsync::data

#include <cmath>
#include <limits>

#include "ckpt_test_util.h"
#include "gmock/gmock.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gtest/gtest.h"

namespace gradsync::ckpt {
namespace {

using ::testing::HasSubstr;
using testing::SmallState;

TEST(DiffParamsTest, MaxAbsoluteAndRelativeDifferencePerTensor) {
  RankState a = SmallState();
  RankState b = SmallState();
  // layer.weight [2, 3] = 1 2 3 4 5 6; layer.bias [3] = -1 -2 -3.
  b.params[1] = 2.5f;  // |diff| 0.5, relative 0.5 / 2.5 = 0.2
  b.params[3] = 3.0f;  // |diff| 1,   relative 1 / 4 = 0.25
  a.params[6] = 0.0f;
  b.params[6] = 0.0f;  // two zeros: no difference
  b.params[7] = 2.0f;  // |diff| 4,   relative 4 / 2 = 2
  absl::StatusOr<std::vector<TensorDiff>> diff = DiffParams(a, b);
  ASSERT_TRUE(diff.ok()) << diff.status();
  ASSERT_EQ(diff->size(), 2u);
  EXPECT_EQ((*diff)[0].name, "layer.weight");
  EXPECT_EQ((*diff)[0].numel, 6);
  EXPECT_DOUBLE_EQ((*diff)[0].max_abs, 1.0);
  EXPECT_DOUBLE_EQ((*diff)[0].max_rel, 0.25);
  EXPECT_EQ((*diff)[1].name, "layer.bias");
  EXPECT_EQ((*diff)[1].numel, 3);
  EXPECT_DOUBLE_EQ((*diff)[1].max_abs, 4.0);
  EXPECT_DOUBLE_EQ((*diff)[1].max_rel, 2.0);
}

TEST(DiffParamsTest, IdenticalStatesDifferByZero) {
  absl::StatusOr<std::vector<TensorDiff>> diff = DiffParams(SmallState(), SmallState(1));
  ASSERT_TRUE(diff.ok()) << diff.status();
  for (const TensorDiff& d : *diff) {
    EXPECT_EQ(d.max_abs, 0.0) << d.name;
    EXPECT_EQ(d.max_rel, 0.0) << d.name;
  }
}

TEST(DiffParamsTest, ANaNOnOneSideIsAnInfiniteDifference) {
  RankState a = SmallState();
  RankState b = SmallState();
  b.params[0] = std::numeric_limits<float>::quiet_NaN();
  absl::StatusOr<std::vector<TensorDiff>> diff = DiffParams(a, b);
  ASSERT_TRUE(diff.ok());
  EXPECT_TRUE(std::isinf((*diff)[0].max_abs));
  EXPECT_TRUE(std::isinf((*diff)[0].max_rel));
  EXPECT_EQ((*diff)[1].max_abs, 0.0);
}

TEST(DiffParamsTest, AShapeMismatchNamesTheParameter) {
  RankState a = SmallState();
  RankState b;
  b.layout.Add("layer.weight", {3, 2}, true);
  b.layout.Add("layer.bias", {3}, false);
  b.params = a.params;
  absl::StatusOr<std::vector<TensorDiff>> diff = DiffParams(a, b);
  EXPECT_EQ(diff.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(diff.status().message(), HasSubstr("layer.weight [2, 3] vs layer.weight [3, 2]"));
}

TEST(DiffParamsTest, ADifferentParameterCountIsAFailedPrecondition) {
  RankState a = SmallState();
  RankState b;
  b.layout.Add("layer.weight", {2, 3}, true);
  b.params.assign(6, 0.0f);
  absl::StatusOr<std::vector<TensorDiff>> diff = DiffParams(a, b);
  EXPECT_EQ(diff.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(diff.status().message(), HasSubstr("2 and 1 parameters"));
}

}  // namespace
}  // namespace gradsync::ckpt

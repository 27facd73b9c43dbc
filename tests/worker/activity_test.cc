// The heartbeat's account of what a rank is doing, from its collective counters.
#include "gradsync/train/activity.h"

#include "gtest/gtest.h"

namespace gradsync::worker {
namespace {

TEST(Activity, NamesTheBucketOfTheOldestCollectiveInFlight) {
  const train::StepMarker at{42, 200, 5};
  EXPECT_EQ(train::DescribeActivity(at, 204, 202),
            "waiting in collective #202: all-reduce of gradient bucket 3 of 5, step 42");
  EXPECT_EQ(train::DescribeActivity(at, 201, 200),
            "waiting in collective #200: all-reduce of gradient bucket 1 of 5, step 42");
  EXPECT_EQ(train::DescribeActivity(at, 206, 205), "waiting in collective #205: loss all-reduce, step 42");
}

TEST(Activity, CountsBucketsLaunchedWhileComputing) {
  const train::StepMarker at{42, 200, 5};
  EXPECT_EQ(train::DescribeActivity(at, 200, 200), "computing step 42: 0 of 5 gradient buckets launched");
  EXPECT_EQ(train::DescribeActivity(at, 203, 203), "computing step 42: 3 of 5 gradient buckets launched");
}

TEST(Activity, BeforeTheFirstStep) {
  EXPECT_EQ(train::DescribeActivity(train::StepMarker{}, 0, 0), "starting");
  EXPECT_EQ(train::DescribeActivity(train::StepMarker{}, 3, 1), "waiting in collective #1 (initial broadcast)");
}

}  // namespace
}  // namespace gradsync::worker

// DownsampledSeries: a long run in bounded points, the start kept, means exact, the newest steps
// as published, late steps, and the change feed a store mirrors.
#include "gradsync/telemetry/downsampled_series.h"

#include <cmath>
#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync::telemetry {
namespace {

// A loss that falls fast at first and then slowly, with noise that does not average out over a
// bucket by accident.
double LossAt(int64_t step) {
  return 2.0 + 8.0 * std::exp(-static_cast<double>(step) / 3000.0) + 0.25 * std::sin(static_cast<double>(step) * 0.37);
}

v1::ReducedStep Step(int64_t step, int32_t generation = 1) {
  v1::ReducedStep s;
  s.set_job_id("j");
  s.set_generation(generation);
  s.set_step(step);
  s.set_loss(LossAt(step));
  s.set_tokens(1000 + step % 7);
  s.set_samples(8);
  s.set_step_seconds(0.5);
  s.set_tokens_per_second(static_cast<double>(s.tokens()) / 0.5);
  s.set_grad_norm(1.0 + static_cast<double>(step % 3));
  s.set_learning_rate(1e-3);
  return s;
}

std::vector<v1::ReducedStep> Points(const DownsampledSeries& series, size_t limit = 0) {
  google::protobuf::RepeatedPtrField<v1::ReducedStep> out;
  series.AppendTo(limit, &out);
  return {out.begin(), out.end()};
}

// The raw mean loss of steps [first, last].
double RawMean(int64_t first, int64_t last) {
  double sum = 0;
  for (int64_t s = first; s <= last; ++s) sum += LossAt(s);
  return sum / static_cast<double>(last - first + 1);
}

TEST(DownsampledSeries, HundredThousandStepsKeepTheStartTheMeanAndTheNewestSteps) {
  constexpr int64_t kSteps = 100'000;
  DownsampledSeries series({.capacity = 2000, .recent = 500});
  for (int64_t s = 0; s < kSteps; ++s) series.Add(Step(s));
  const std::vector<v1::ReducedStep> points = Points(series);

  ASSERT_LE(points.size(), 2000u);
  EXPECT_GT(points.size(), 1000u) << "the old part should use most of its room";
  // The first step, as published.
  EXPECT_EQ(points.front().step(), 0);
  EXPECT_EQ(points.front().merged_steps(), 1);
  EXPECT_EQ(points.front().loss(), LossAt(0));

  // Every step is in exactly one point, in order, and each point's mean, min and max are those
  // of the raw steps it stands for.
  int64_t next = 0, merged = 0;
  double weighted = 0;
  for (const v1::ReducedStep& p : points) {
    ASSERT_EQ(p.first_step(), next) << "a gap or an overlap before step " << p.step();
    ASSERT_EQ(p.step() - p.first_step() + 1, p.merged_steps());
    EXPECT_NEAR(p.loss(), RawMean(p.first_step(), p.step()), 1e-12 * p.loss()) << "point at " << p.step();
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t s = p.first_step(); s <= p.step(); ++s) {
      lo = std::min(lo, LossAt(s));
      hi = std::max(hi, LossAt(s));
    }
    EXPECT_EQ(p.min_loss(), lo);
    EXPECT_EQ(p.max_loss(), hi);
    merged += p.merged_steps();
    weighted += p.loss() * static_cast<double>(p.merged_steps());
    next = p.step() + 1;
  }
  EXPECT_EQ(merged, kSteps);
  EXPECT_NEAR(weighted / static_cast<double>(merged), RawMean(0, kSteps - 1), 1e-12);

  // A downsampled range: the old buckets between steps 10k and 20k together hold the raw mean.
  int64_t first = -1, last = -1, n = 0;
  double sum = 0;
  for (const v1::ReducedStep& p : points) {
    if (p.first_step() < 10'000 || p.step() >= 20'000) continue;
    ASSERT_GT(p.merged_steps(), 1);
    if (first < 0) first = p.first_step();
    last = p.step();
    sum += p.loss() * static_cast<double>(p.merged_steps());
    n += p.merged_steps();
  }
  ASSERT_GT(n, 9000);
  EXPECT_NEAR(sum / static_cast<double>(n), RawMean(first, last), 1e-12);

  // The newest 500 steps, exact.
  ASSERT_GE(points.size(), 500u);
  for (size_t i = points.size() - 500; i < points.size(); ++i) {
    const int64_t step = kSteps - static_cast<int64_t>(points.size() - i);
    ASSERT_EQ(points[i].step(), step);
    EXPECT_EQ(points[i].merged_steps(), 1);
    EXPECT_EQ(points[i].loss(), LossAt(step));
    EXPECT_EQ(points[i].tokens(), 1000 + step % 7);
  }
  // Sums stay sums; throughput is tokens over the steps' time.
  int64_t tokens = 0;
  for (const v1::ReducedStep& p : points) {
    tokens += p.tokens();
    EXPECT_NEAR(p.tokens_per_second(), static_cast<double>(p.tokens()) / (0.5 * p.merged_steps()), 1e-6);
  }
  int64_t raw_tokens = 0;
  for (int64_t s = 0; s < kSteps; ++s) raw_tokens += 1000 + s % 7;
  EXPECT_EQ(tokens, raw_tokens);
}

TEST(DownsampledSeries, OldBucketsShareOneWidth) {
  DownsampledSeries series({.capacity = 100, .recent = 20});
  for (int64_t s = 0; s < 10'000; ++s) series.Add(Step(s));
  const std::vector<v1::ReducedStep> points = Points(series);
  ASSERT_LE(points.size(), 100u);
  const int64_t width = series.width();
  EXPECT_GE(width, 10'000 / 100);
  // Between the first step and the open bucket, every bucket holds `width` steps.
  for (size_t i = 1; i + 1 < points.size() - 20; ++i) EXPECT_EQ(points[i].merged_steps(), width) << i;
  EXPECT_LE(points[points.size() - 21].merged_steps(), width);
}

TEST(DownsampledSeries, LimitGivesTheNewestPoints) {
  DownsampledSeries series({.capacity = 50, .recent = 10});
  for (int64_t s = 0; s < 1000; ++s) series.Add(Step(s));
  const std::vector<v1::ReducedStep> last = Points(series, 3);
  ASSERT_EQ(last.size(), 3u);
  EXPECT_EQ(last[0].step(), 997);
  EXPECT_EQ(last[2].step(), 999);
}

TEST(DownsampledSeries, LateStepsGoWhereTheyBelong) {
  DownsampledSeries series({.capacity = 20, .recent = 5});
  for (int64_t s = 0; s < 200; ++s) {
    if (s != 150 && s != 198) series.Add(Step(s));
  }
  series.Add(Step(198));  // among the recent steps
  series.Add(Step(150));  // into the old bucket that covers it
  const std::vector<v1::ReducedStep> points = Points(series);
  int64_t merged = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    EXPECT_LT(std::pair(points[i - 1].generation(), points[i - 1].step()),
              std::pair(points[i].generation(), points[i].step()));
  }
  for (const v1::ReducedStep& p : points) merged += p.merged_steps();
  EXPECT_EQ(merged, 200);
  EXPECT_EQ(points[points.size() - 2].step(), 198);
  EXPECT_EQ(points[points.size() - 2].merged_steps(), 1);
}

TEST(DownsampledSeries, AStepOlderThanTheFirstBecomesTheFirst) {
  DownsampledSeries series({.capacity = 10, .recent = 3});
  for (int64_t s = 5; s < 100; ++s) series.Add(Step(s));
  series.Add(Step(2));
  const std::vector<v1::ReducedStep> points = Points(series);
  EXPECT_EQ(points.front().step(), 2);
  EXPECT_EQ(points.front().merged_steps(), 1);
  EXPECT_EQ(points[1].first_step(), 5);
}

TEST(DownsampledSeries, AllPointsRestoreTheSameSeries) {
  DownsampledSeriesOptions options{.capacity = 64, .recent = 16};
  DownsampledSeries series(options);
  for (int64_t s = 0; s < 5000; ++s) series.Add(Step(s));
  DownsampledSeries restored = DownsampledSeries::FromPoints(options, series.AllPoints());
  EXPECT_EQ(restored.width(), series.width());
  for (int64_t s = 5000; s < 9000; ++s) {
    series.Add(Step(s));
    restored.Add(Step(s));
  }
  const std::vector<v1::ReducedStep> a = Points(series), b = Points(restored);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].SerializeAsString(), b[i].SerializeAsString()) << i;
}

TEST(DownsampledSeries, ASmallerCapacityMergesTheRestoredSeries) {
  DownsampledSeries series({.capacity = 400, .recent = 100});
  for (int64_t s = 0; s < 5000; ++s) series.Add(Step(s));
  DownsampledSeries smaller = DownsampledSeries::FromPoints({.capacity = 50, .recent = 10}, series.AllPoints());
  const std::vector<v1::ReducedStep> points = Points(smaller);
  ASSERT_LE(points.size(), 50u);
  int64_t merged = 0;
  for (const v1::ReducedStep& p : points) merged += p.merged_steps();
  EXPECT_EQ(merged, 5000);
  EXPECT_EQ(points.front().step(), 0);
  EXPECT_EQ(points.back().step(), 4999);
}

// A store applying every TakeChanges() by id holds the series itself.
TEST(DownsampledSeries, ChangesMirrorTheSeries) {
  DownsampledSeries series({.capacity = 40, .recent = 8, .track_changes = true});
  std::map<int64_t, std::string> mirror;
  auto apply = [&] {
    DownsampledSeries::Changes c = series.TakeChanges();
    for (int64_t id : c.removed) EXPECT_EQ(mirror.erase(id), 1u) << "removed an id never handed out: " << id;
    for (const DownsampledSeries::Point& p : c.upserted) mirror[p.id] = p.step.SerializeAsString();
  };
  for (int64_t s = 0; s < 3000; ++s) {
    if (s % 97 == 5) continue;  // published late, below
    series.Add(Step(s));
    if (s % 97 == 40) series.Add(Step(s - 35));
    if (s % 13 == 0) apply();
  }
  apply();
  std::map<int64_t, std::string> expected;
  for (const DownsampledSeries::Point& p : series.AllPoints()) expected[p.id] = p.step.SerializeAsString();
  EXPECT_EQ(mirror, expected);
  EXPECT_FALSE(series.HasChanges());
}

TEST(DownsampledSeries, MergingTakesMeansSumsAndTheNewestValidationLoss) {
  v1::ReducedStep a = Step(10), b = Step(11);
  a.set_validation_loss(3.0);
  a.set_partial(true);
  a.add_ranks()->set_rank(0);
  const v1::ReducedStep m = MergePoints(a, b);
  EXPECT_EQ(m.merged_steps(), 2);
  EXPECT_EQ(m.first_step(), 10);
  EXPECT_EQ(m.step(), 11);
  EXPECT_DOUBLE_EQ(m.loss(), (LossAt(10) + LossAt(11)) / 2);
  EXPECT_EQ(m.tokens(), a.tokens() + b.tokens());
  EXPECT_DOUBLE_EQ(m.grad_norm(), (a.grad_norm() + b.grad_norm()) / 2);
  EXPECT_TRUE(m.partial());
  EXPECT_EQ(m.validation_loss(), 3.0);
  EXPECT_EQ(m.ranks_size(), 0);
  b.set_validation_loss(2.5);
  EXPECT_EQ(MergePoints(a, b).validation_loss(), 2.5);
}

}  // namespace
}  // namespace gradsync::telemetry

// StepReducer without a server: reduction arithmetic, arrival order, duplicates, late reports,
// timeouts (fake clock), generations, stragglers and the bounds on what it keeps.
#include "gradsync/telemetry/step_reducer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync::telemetry {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

class StepReducerTest : public ::testing::Test {
 protected:
  StepReducerTest() { Reset(StepReducerOptions()); }

  void Reset(StepReducerOptions options) {
    options.clock = [this] { return now_; };
    reducer_ = std::make_unique<StepReducer>(std::move(options));
  }

  static v1::StepReport Report(int64_t step, int32_t rank, int32_t world_size = 2, int32_t generation = 1) {
    v1::StepReport r;
    r.set_job_id("j");
    r.set_generation(generation);
    r.set_rank(rank);
    r.set_world_size(world_size);
    r.set_step(step);
    r.set_epoch(3);
    r.set_loss(1.0 + rank);
    r.set_samples(8);
    r.set_tokens(1024);
    r.set_step_seconds(0.5 + 0.1 * rank);
    r.set_compute_seconds(0.3 + 0.1 * rank);
    r.set_communication_seconds(0.2 + 0.2 * rank);
    r.set_exposed_communication_seconds(0.05 * (rank + 1));
    r.set_grad_norm(rank == 0 ? 2.5 : 99);
    r.set_learning_rate(1e-3);
    r.add_buckets()->set_bytes(1000);
    r.add_buckets()->set_bytes(24);
    return r;
  }

  // Adds and returns what the report published; fails the test on an error.
  std::vector<v1::ReducedStep> Add(const v1::StepReport& r, ReportOutcome expected = ReportOutcome::kAccepted) {
    auto result = reducer_->Add(r);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return {};
    EXPECT_EQ(result->outcome, expected) << "step " << r.step() << " rank " << r.rank();
    return result->published;
  }

  v1::JobSeries Series(size_t limit = 0) {
    auto s = reducer_->Series("j", limit);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : v1::JobSeries();
  }

  static std::vector<int64_t> Steps(const v1::JobSeries& s) {
    std::vector<int64_t> steps;
    for (const auto& step : s.steps()) steps.push_back(step.step());
    return steps;
  }

  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  std::unique_ptr<StepReducer> reducer_;
};

TEST_F(StepReducerTest, InOrderReportsReduceAcrossRanksWhenTheLastRankArrives) {
  EXPECT_THAT(Add(Report(0, 0)), IsEmpty());
  std::vector<v1::ReducedStep> out = Add(Report(0, 1));
  ASSERT_EQ(out.size(), 1u);
  const v1::ReducedStep& s = out[0];
  EXPECT_EQ(s.job_id(), "j");
  EXPECT_EQ(s.step(), 0);
  EXPECT_EQ(s.epoch(), 3);
  EXPECT_FALSE(s.partial());
  EXPECT_DOUBLE_EQ(s.loss(), 1.5);
  EXPECT_EQ(s.samples(), 16);
  EXPECT_EQ(s.tokens(), 2048);
  EXPECT_DOUBLE_EQ(s.step_seconds(), 0.6);
  EXPECT_EQ(s.slowest_rank(), 1);
  EXPECT_DOUBLE_EQ(s.tokens_per_second(), 2048 / 0.6);
  EXPECT_DOUBLE_EQ(s.mean_compute_seconds(), 0.35);
  EXPECT_DOUBLE_EQ(s.max_compute_seconds(), 0.4);
  EXPECT_DOUBLE_EQ(s.mean_communication_seconds(), 0.3);
  EXPECT_DOUBLE_EQ(s.max_communication_seconds(), 0.4);
  EXPECT_DOUBLE_EQ(s.mean_exposed_communication_seconds(), 0.075);
  EXPECT_DOUBLE_EQ(s.max_exposed_communication_seconds(), 0.1);
  EXPECT_DOUBLE_EQ(s.grad_norm(), 2.5);  // rank 0's
  EXPECT_DOUBLE_EQ(s.learning_rate(), 1e-3);
  EXPECT_EQ(s.allreduce_bytes(), 2048);
  ASSERT_EQ(s.ranks_size(), 2);
  EXPECT_EQ(s.ranks(1).rank(), 1);
  EXPECT_DOUBLE_EQ(s.ranks(1).loss(), 2.0);
  EXPECT_EQ(s.ranks(1).allreduce_bytes(), 1024);
  EXPECT_THAT(s.straggler_ranks(), IsEmpty());

  Add(Report(1, 0));
  Add(Report(1, 1));
  EXPECT_THAT(Steps(Series()), ElementsAre(0, 1));
  EXPECT_EQ(Series().reports(), 4);
}

TEST_F(StepReducerTest, OutOfOrderArrivalPublishesEachStepWhenComplete) {
  Add(Report(2, 1));
  Add(Report(1, 1));
  EXPECT_THAT(Add(Report(2, 0)), ElementsAre(::testing::Property(&v1::ReducedStep::step, 2)));
  Add(Report(0, 1));
  EXPECT_EQ(Add(Report(0, 0)).size(), 1u);
  EXPECT_EQ(Add(Report(1, 0)).size(), 1u);
  // The series is ordered by step whatever the order of publication.
  EXPECT_THAT(Steps(Series()), ElementsAre(0, 1, 2));
}

TEST_F(StepReducerTest, DuplicateReportsAreIgnored) {
  Add(Report(5, 0));
  Add(Report(5, 0), ReportOutcome::kDuplicate);
  EXPECT_EQ(Add(Report(5, 1)).size(), 1u);
  v1::JobSeries s = Series();
  EXPECT_EQ(s.duplicate_reports(), 1);
  EXPECT_DOUBLE_EQ(s.steps(0).loss(), 1.5);
}

TEST_F(StepReducerTest, ReportsForAPublishedStepAreLate) {
  Add(Report(5, 0));
  Add(Report(5, 1));
  Add(Report(5, 1), ReportOutcome::kLate);
  EXPECT_EQ(Series().late_reports(), 1);
  EXPECT_EQ(Series().steps_size(), 1);
}

TEST_F(StepReducerTest, TimeoutPublishesAPartialStepNamingTheMissingRanks) {
  StepReducerOptions options;
  options.step_timeout = absl::Seconds(30);
  Reset(options);
  Add(Report(7, 1, /*world_size=*/4));
  Add(Report(7, 3, 4));
  now_ += absl::Seconds(29);
  EXPECT_THAT(reducer_->Tick().published, IsEmpty());
  now_ += absl::Seconds(1);
  TickResult tick = reducer_->Tick();
  ASSERT_EQ(tick.published.size(), 1u);
  const v1::ReducedStep& s = tick.published[0];
  EXPECT_TRUE(s.partial());
  EXPECT_THAT(s.missing_ranks(), ElementsAre(0, 2));
  EXPECT_DOUBLE_EQ(s.loss(), 3.0);  // mean of ranks 1 and 3
  EXPECT_EQ(s.samples(), 16);
  EXPECT_DOUBLE_EQ(s.grad_norm(), 99);  // rank 0 absent: the lowest reporting rank's
  EXPECT_EQ(Series().partial_steps(), 1);
  // The straggling rank's report is late once the step is out.
  Add(Report(7, 0, 4), ReportOutcome::kLate);
}

TEST_F(StepReducerTest, NewerGenerationSupersedesPendingStepsAndOlderReportsAreLate) {
  Add(Report(10, 0, 2, /*generation=*/1));
  Add(Report(11, 0, 2, 1));
  // Generation 2 resumes from a checkpoint at a step generation 1 had already published.
  Add(Report(3, 0, 2, 1));
  Add(Report(3, 1, 2, 1));
  Add(Report(3, 0, 3, 2));
  Add(Report(3, 1, 3, 2));
  EXPECT_EQ(Add(Report(3, 2, 3, 2)).size(), 1u);
  Add(Report(10, 1, 2, 1), ReportOutcome::kLate);
  v1::JobSeries s = Series();
  EXPECT_EQ(s.generation(), 2);
  EXPECT_EQ(s.superseded_steps(), 2);
  EXPECT_EQ(s.late_reports(), 1);
  ASSERT_EQ(s.steps_size(), 2);
  EXPECT_EQ(s.steps(0).generation(), 1);
  EXPECT_EQ(s.steps(1).generation(), 2);
  EXPECT_EQ(s.steps(1).world_size(), 3);
  // Nothing of generation 1 is left to time out.
  now_ += absl::Hours(1);
  EXPECT_THAT(reducer_->Tick().published, IsEmpty());
}

TEST_F(StepReducerTest, FlagsARankSlowerThanTheMedianByTheFactor) {
  StepReducerOptions options;
  options.straggler_factor = 1.5;
  Reset(options);
  auto report = [](int64_t step, int32_t rank, double seconds) {
    v1::StepReport r = Report(step, rank, 3);
    r.set_step_seconds(seconds);
    return r;
  };
  Add(report(0, 0, 1.0));
  Add(report(0, 1, 1.1));
  std::vector<v1::ReducedStep> out = Add(report(0, 2, 1.6));  // median 1.1: 1.6 < 1.65
  ASSERT_EQ(out.size(), 1u);
  EXPECT_THAT(out[0].straggler_ranks(), IsEmpty());
  Add(report(1, 0, 1.0));
  Add(report(1, 1, 2.0));
  out = Add(report(1, 2, 1.0));  // median 1.0: rank 1 straggles
  ASSERT_EQ(out.size(), 1u);
  EXPECT_THAT(out[0].straggler_ranks(), ElementsAre(1));
  Add(report(2, 0, 3.0));
  Add(report(2, 1, 1.0));
  Add(report(2, 2, 1.0));
  v1::JobSeries s = Series();
  EXPECT_EQ(s.last_straggler_rank(), 0);
  EXPECT_THAT(s.straggler_counts(), UnorderedElementsAre(Pair(0, 1), Pair(1, 1)));
}

TEST_F(StepReducerTest, WithTwoRanksTheFasterOneIsTheReference) {
  v1::StepReport fast = Report(0, 0), slow = Report(0, 1);
  fast.set_step_seconds(1.0);
  slow.set_step_seconds(1.6);
  Add(fast);
  std::vector<v1::ReducedStep> out = Add(slow);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_THAT(out[0].straggler_ranks(), ElementsAre(1));
}

TEST_F(StepReducerTest, SeriesIsBoundedAndKeepsTheFirstStep) {
  StepReducerOptions options;
  options.series_capacity = 8;
  options.series_recent = 2;
  Reset(options);
  for (int64_t step = 0; step < 40; ++step) {
    Add(Report(step, 0));
    Add(Report(step, 1));
  }
  const v1::JobSeries s = Series();
  ASSERT_LE(s.steps_size(), 8);
  EXPECT_EQ(s.steps(0).step(), 0);
  EXPECT_EQ(s.steps(0).merged_steps(), 1);
  int64_t merged = 0;
  for (const v1::ReducedStep& p : s.steps()) merged += p.merged_steps();
  EXPECT_EQ(merged, 40);
  EXPECT_THAT(Steps(Series(2)), ElementsAre(38, 39));
  // Steps merged into older points still count as published.
  Add(Report(0, 1), ReportOutcome::kLate);
}

TEST_F(StepReducerTest, ARestoredJobGoesOnWhereItStopped) {
  StepReducerOptions options;
  options.track_series_changes = true;
  Reset(options);
  for (int64_t step = 0; step < 5; ++step) {
    Add(Report(step, 0));
    Add(Report(step, 1));
  }
  std::vector<SeriesChanges> changes = reducer_->TakeSeriesChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].counters.reports(), 10);
  EXPECT_EQ(changes[0].points.upserted.size(), 5u);
  EXPECT_THAT(reducer_->TakeSeriesChanges(), IsEmpty());

  StoredJob stored{changes[0].counters, changes[0].last_report, changes[0].points.upserted};
  Reset(options);
  ASSERT_TRUE(reducer_->Restore(stored).ok());
  EXPECT_EQ(reducer_->Restore(stored).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(reducer_->Tracks("j"));
  EXPECT_THAT(Steps(Series()), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_EQ(Series().reports(), 10);
  // A step published before the restart is late; the next one is new.
  Add(Report(4, 0), ReportOutcome::kLate);
  Add(Report(5, 0));
  Add(Report(5, 1));
  EXPECT_THAT(Steps(Series()), ElementsAre(0, 1, 2, 3, 4, 5));
  changes = reducer_->TakeSeriesChanges();
  ASSERT_EQ(changes.size(), 1u);
  ASSERT_EQ(changes[0].points.upserted.size(), 1u);
  EXPECT_EQ(changes[0].points.upserted[0].step.step(), 5);
  EXPECT_GE(changes[0].points.upserted[0].id, 5) << "ids are never reused";
}

TEST_F(StepReducerTest, AJobIsForgottenOnlyOnceItsLastChangesAreTaken) {
  StepReducerOptions options;
  options.track_series_changes = true;
  options.job_idle_ttl = absl::Minutes(10);
  Reset(options);
  Add(Report(0, 0));
  Add(Report(0, 1));
  now_ += absl::Minutes(10);
  EXPECT_THAT(reducer_->Tick().forgotten_jobs, IsEmpty());
  std::vector<SeriesChanges> changes = reducer_->TakeSeriesChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].job_id, "j");
  EXPECT_EQ(changes[0].points.upserted.size(), 1u);
  EXPECT_THAT(reducer_->Tick().forgotten_jobs, ElementsAre("j"));
  EXPECT_EQ(reducer_->SeriesSnapshot("j").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StepReducerTest, PendingStepsAreBounded) {
  StepReducerOptions options;
  options.max_pending_steps = 3;
  Reset(options);
  Add(Report(0, 0));
  Add(Report(1, 0));
  Add(Report(2, 0));
  std::vector<v1::ReducedStep> out = Add(Report(3, 0));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].step(), 0);
  EXPECT_TRUE(out[0].partial());
  EXPECT_THAT(out[0].missing_ranks(), ElementsAre(1));
}

TEST_F(StepReducerTest, IdleJobsAreForgotten) {
  StepReducerOptions options;
  options.job_idle_ttl = absl::Minutes(10);
  Reset(options);
  Add(Report(0, 0));
  Add(Report(0, 1));
  now_ += absl::Minutes(9);
  EXPECT_THAT(reducer_->Tick().forgotten_jobs, IsEmpty());
  now_ += absl::Minutes(1);
  EXPECT_THAT(reducer_->Tick().forgotten_jobs, ElementsAre("j"));
  EXPECT_EQ(reducer_->Series("j").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(reducer_->Jobs(), IsEmpty());
}

TEST_F(StepReducerTest, RejectsMalformedReports) {
  v1::StepReport r = Report(0, 0);
  r.clear_job_id();
  EXPECT_EQ(reducer_->Add(r).status().code(), absl::StatusCode::kInvalidArgument);
  r = Report(0, 2);
  EXPECT_EQ(reducer_->Add(r).status().code(), absl::StatusCode::kInvalidArgument);
  r = Report(-1, 0);
  EXPECT_EQ(reducer_->Add(r).status().code(), absl::StatusCode::kInvalidArgument);
  Add(Report(0, 0, 2));
  EXPECT_EQ(reducer_->Add(Report(0, 1, 3)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Series().reports(), 1);
}

// A report claiming 2^31-1 ranks once made the timeout count out that many missing ranks.
TEST_F(StepReducerTest, AHugeWorldSizeAndTooManyJobsAreRefused) {
  auto huge = reducer_->Add(Report(0, 0, 2147483647));
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(huge.status().message()), HasSubstr("world_size 2147483647 exceeds the limit of 4096"));
  EXPECT_EQ(Add(Report(0, 0, 4096)).size(), 0u) << "the limit itself is accepted";

  StepReducerOptions few;
  few.max_jobs = 2;
  Reset(few);
  for (const char* job : {"a", "b"}) {
    v1::StepReport r = Report(0, 0);
    r.set_job_id(job);
    EXPECT_TRUE(reducer_->Add(r).ok());
  }
  v1::StepReport third = Report(0, 0);
  third.set_job_id("c");
  EXPECT_EQ(reducer_->Add(third).status().code(), absl::StatusCode::kResourceExhausted);
  third.set_job_id("a");
  third.set_rank(1);
  EXPECT_TRUE(reducer_->Add(third).ok()) << "a job already tracked still reports";
  EXPECT_EQ(reducer_->Jobs().size(), 2u);
}

TEST_F(StepReducerTest, WorldOfOneRankPublishesAtOnce) { EXPECT_EQ(Add(Report(0, 0, 1)).size(), 1u); }

}  // namespace
}  // namespace gradsync::telemetry

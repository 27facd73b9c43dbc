// MetricsCollector and TrainingMetrics without servers: what reaches the Prometheus registry.
#include "metrics_collector.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "prometheus_text.h"

namespace gradsync::metrics {
namespace {

using testing::SampleValue;

v1::StepReport Report(const std::string& job, int32_t rank, int64_t step, double seconds) {
  v1::StepReport r;
  r.set_job_id(job);
  r.set_generation(1);
  r.set_rank(rank);
  r.set_world_size(2);
  r.set_step(step);
  r.set_loss(1.0);
  r.set_step_seconds(seconds);
  return r;
}

class MetricsCollectorTest : public ::testing::Test {
 protected:
  MetricsCollectorTest() {
    telemetry::StepReducerOptions options;
    options.job_idle_ttl = absl::Minutes(5);
    options.clock = [this] { return now_; };
    collector_ = std::make_unique<MetricsCollector>(options, &metrics_);
  }

  std::string Text() { return prometheus::TextSerializer().Serialize(metrics_.registry()->Collect()); }

  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  TrainingMetrics metrics_;
  std::unique_ptr<MetricsCollector> collector_;
};

TEST_F(MetricsCollectorTest, CountsStragglersDuplicatesLateAndInvalidReports) {
  ASSERT_TRUE(collector_->Ingest(Report("a", 0, 0, 1.0)).ok());
  ASSERT_TRUE(collector_->Ingest(Report("a", 0, 0, 1.0)).ok());  // duplicate
  ASSERT_TRUE(collector_->Ingest(Report("a", 1, 0, 2.0)).ok());  // straggles: 2.0 > 1.5 x 1.0
  ASSERT_TRUE(collector_->Ingest(Report("a", 1, 0, 2.0)).ok());  // late
  EXPECT_FALSE(collector_->Ingest(Report("", 0, 0, 1.0)).ok());
  const std::string text = Text();
  EXPECT_EQ(SampleValue(text, R"(gradsync_straggler_total{rank="1",training_job="a"})"), 1);
  EXPECT_EQ(SampleValue(text, R"(gradsync_metrics_duplicate_reports_total{training_job="a"})"), 1);
  EXPECT_EQ(SampleValue(text, R"(gradsync_metrics_late_reports_total{training_job="a"})"), 1);
  EXPECT_EQ(SampleValue(text, R"(gradsync_metrics_reports_total{training_job="a"})"), 4);
  EXPECT_EQ(SampleValue(text, "gradsync_metrics_invalid_reports_total"), 1);
}

TEST_F(MetricsCollectorTest, ForgottenJobsLeaveNoSeries) {
  ASSERT_TRUE(collector_->Ingest(Report("old", 0, 0, 1.0)).ok());
  ASSERT_TRUE(collector_->Ingest(Report("old", 1, 0, 1.0)).ok());
  now_ += absl::Minutes(3);
  ASSERT_TRUE(collector_->Ingest(Report("new", 0, 0, 1.0)).ok());
  ASSERT_TRUE(collector_->Ingest(Report("new", 1, 0, 1.0)).ok());
  now_ += absl::Minutes(3);
  collector_->Tick();
  const std::string text = Text();
  EXPECT_EQ(text.find(R"(training_job="old")"), std::string::npos) << text;
  EXPECT_EQ(SampleValue(text, R"(gradsync_train_loss{training_job="new"})"), 1.0);
  EXPECT_EQ(collector_->Jobs().job_ids_size(), 1);
}

TEST_F(MetricsCollectorTest, JobGaugesFollowTheNewestStepNotALatePartialOne) {
  ASSERT_TRUE(collector_->Ingest(Report("a", 0, 0, 1.0)).ok());  // step 0 waits for rank 1
  v1::StepReport r0 = Report("a", 0, 1, 1.0), r1 = Report("a", 1, 1, 1.0);
  r0.set_loss(0.5);
  r1.set_loss(0.5);
  ASSERT_TRUE(collector_->Ingest(r0).ok());
  ASSERT_TRUE(collector_->Ingest(r1).ok());
  now_ += absl::Minutes(1);
  collector_->Tick();  // step 0 published partial, after step 1
  const std::string text = Text();
  EXPECT_EQ(SampleValue(text, R"(gradsync_train_step{training_job="a"})"), 1);
  EXPECT_EQ(SampleValue(text, R"(gradsync_train_loss{training_job="a"})"), 0.5);
  EXPECT_EQ(SampleValue(text, R"(gradsync_metrics_partial_steps_total{training_job="a"})"), 1);
}

// Every series a scrape shows, sample lines of histograms' buckets, sums and counts included.
size_t SeriesIn(const std::string& text) {
  size_t n = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!line.empty() && line[0] != '#') ++n;
  }
  return n;
}

// The bound is on what a scrape holds: a job with every one of its series made (memory gauges,
// the device peak, a validation loss) has exactly the series it was charged.
TEST_F(MetricsCollectorTest, AJobAndARankCostTheSeriesAScrapeShows) {
  const size_t unlabelled = SeriesIn(Text());
  v1::StepReport r = Report("full", 0, 0, 1.0);
  r.set_world_size(1);
  r.set_validation_loss(0.25);
  v1::RankMemory* m = r.mutable_memory();
  m->set_param_bytes(1);
  m->set_grad_bytes(1);
  m->set_optimizer_bytes(1);
  m->set_peak_rss_bytes(1);
  m->set_peak_device_bytes(1);
  ASSERT_TRUE(collector_->Ingest(r).ok());
  const std::string text = Text();
  ASSERT_EQ(SampleValue(text, R"(gradsync_validation_loss{training_job="full"})"), 0.25) << text;
  EXPECT_EQ(SeriesIn(text) - unlabelled, TrainingMetrics::kJobSeries + TrainingMetrics::kRankSeries) << text;
}

// 4096 ranks of 58 series each would already be 237K series; a small cap shows the same refusal.
TEST(MetricsCollectorLimits, ReportsWhoseSeriesPassTheCapAreRefusedUntilAJobIsForgotten) {
  absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  telemetry::StepReducerOptions options;
  options.job_idle_ttl = absl::Minutes(5);
  options.clock = [&now] { return now; };
  const size_t cap = TrainingMetrics::kJobSeries + 2 * TrainingMetrics::kRankSeries;
  TrainingMetrics metrics(cap);
  MetricsCollector collector(options, &metrics);
  ASSERT_TRUE(collector.Ingest(Report("a", 0, 0, 1.0)).ok());  // job a and its rank 0
  ASSERT_TRUE(collector.Ingest(Report("a", 1, 0, 1.0)).ok());  // rank 1: the cap is reached
  const absl::Status refused = collector.Ingest(Report("b", 0, 0, 1.0));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), absl::StrCat("holds ", cap, " of its ", cap, " Prometheus series")))
      << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "--max_series")) << refused;
  EXPECT_TRUE(collector.Ingest(Report("a", 0, 1, 1.0)).ok()) << "series that exist still update";

  std::string text = prometheus::TextSerializer().Serialize(metrics.registry()->Collect());
  EXPECT_EQ(text.find(R"(training_job="b")"), std::string::npos) << text;
  EXPECT_EQ(SampleValue(text, "gradsync_metrics_refused_reports_total"), 1);
  EXPECT_EQ(collector.Jobs().job_ids_size(), 1) << "a refused report reaches no reducer";

  now += absl::Minutes(6);
  collector.Tick();  // job a is forgotten, and its series with it
  EXPECT_TRUE(collector.Ingest(Report("b", 0, 0, 1.0)).ok());
  EXPECT_TRUE(collector.Ingest(Report("b", 1, 0, 1.0)).ok());
  text = prometheus::TextSerializer().Serialize(metrics.registry()->Collect());
  EXPECT_EQ(SampleValue(text, R"(gradsync_train_loss{training_job="b"})"), 1.0);
}

}  // namespace
}  // namespace gradsync::metrics

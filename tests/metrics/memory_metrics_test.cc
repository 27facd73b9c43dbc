// Each rank's memory (StepReport.memory) through MetricsCollector into TrainingMetrics: the gauges
// carry the rank's newest figures, a device series exists only for a rank that reported a device
// peak, a rank that reported none has no series, and a forgotten job leaves none behind.
#include "metrics_collector.h"

#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "prometheus_text.h"

namespace gradsync::metrics {
namespace {

using testing::SampleValue;

v1::StepReport Report(const std::string& job, int32_t rank, int64_t step, int64_t optimizer_bytes) {
  v1::StepReport r;
  r.set_job_id(job);
  r.set_generation(1);
  r.set_rank(rank);
  r.set_world_size(3);
  r.set_step(step);
  r.set_loss(1.0);
  r.set_step_seconds(0.1);
  v1::RankMemory* m = r.mutable_memory();
  m->set_rank(rank);
  m->set_param_bytes(8000);
  m->set_grad_bytes(8000);
  m->set_optimizer_bytes(optimizer_bytes);
  m->set_peak_rss_bytes(100'000'000 + step);
  return r;
}

class MemoryMetricsTest : public ::testing::Test {
 protected:
  MemoryMetricsTest() {
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

TEST_F(MemoryMetricsTest, GaugesCarryEachRanksNewestMemory) {
  for (int64_t step = 0; step < 2; ++step) {
    ASSERT_TRUE(collector_->Ingest(Report("j", 0, step, 5344)).ok());
    v1::StepReport gpu = Report("j", 1, step, 5336);
    gpu.mutable_memory()->set_peak_device_bytes(2'000'000'000);
    ASSERT_TRUE(collector_->Ingest(gpu).ok());
    v1::StepReport silent = Report("j", 2, step, 0);
    silent.clear_memory();  // a worker from before memory was reported
    ASSERT_TRUE(collector_->Ingest(silent).ok());
  }
  const std::string text = Text();
  EXPECT_EQ(SampleValue(text, R"(gradsync_rank_memory_bytes{kind="params",rank="0",training_job="j"})"), 8000);
  EXPECT_EQ(SampleValue(text, R"(gradsync_rank_memory_bytes{kind="grads",rank="0",training_job="j"})"), 8000);
  EXPECT_EQ(SampleValue(text, R"(gradsync_rank_memory_bytes{kind="optimizer",rank="0",training_job="j"})"), 5344);
  EXPECT_EQ(SampleValue(text, R"(gradsync_rank_memory_bytes{kind="optimizer",rank="1",training_job="j"})"), 5336);
  EXPECT_EQ(SampleValue(text, R"(gradsync_rank_peak_memory_bytes{kind="rss",rank="0",training_job="j"})"), 100'000'001)
      << "step 1's";
  EXPECT_EQ(SampleValue(text, R"(gradsync_rank_peak_memory_bytes{kind="device",rank="1",training_job="j"})"),
            2'000'000'000);
  EXPECT_EQ(SampleValue(text, R"(gradsync_rank_peak_memory_bytes{kind="device",rank="0",training_job="j"})"),
            std::nullopt)
      << "no device series for a CPU rank";
  EXPECT_EQ(SampleValue(text, R"(gradsync_rank_memory_bytes{kind="params",rank="2",training_job="j"})"), std::nullopt)
      << "no series, not a zero, for a rank that reported no memory";
  const absl::Status check = testing::PromtoolCheck(text);
  if (!absl::IsFailedPrecondition(check)) {
    EXPECT_TRUE(check.ok()) << check;
  }
}

TEST_F(MemoryMetricsTest, AForgottenJobLeavesNoMemorySeries) {
  v1::StepReport gpu = Report("old", 0, 0, 100);
  gpu.mutable_memory()->set_peak_device_bytes(1000);
  ASSERT_TRUE(collector_->Ingest(gpu).ok());
  now_ += absl::Minutes(6);
  collector_->Tick();
  const std::string text = Text();
  EXPECT_EQ(text.find(R"(training_job="old")"), std::string::npos) << text;
}

}  // namespace
}  // namespace gradsync::metrics

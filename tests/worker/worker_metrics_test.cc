// The worker's own /metrics: a step report's memory becomes the rank's memory gauges.
#include "worker_metrics.h"

#include <string>

#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace gradsync::worker {
namespace {

std::string Text(const WorkerMetrics& m) { return prometheus::TextSerializer().Serialize(m.registry()->Collect()); }

v1::StepReport Report(int64_t peak_device) {
  v1::StepReport r;
  r.set_job_id("j");
  r.set_rank(1);
  r.set_step_seconds(0.1);
  v1::RankMemory* m = r.mutable_memory();
  m->set_rank(1);
  m->set_param_bytes(8572);
  m->set_grad_bytes(8572);
  m->set_optimizer_bytes(8568);
  m->set_peak_rss_bytes(123456789);
  m->set_peak_device_bytes(peak_device);
  return r;
}

TEST(WorkerMetricsTest, AStepReportsMemoryBecomesTheRanksGauges) {
  WorkerMetrics metrics;
  metrics.RecordStep(Report(0));
  std::string text = Text(metrics);
  EXPECT_NE(text.find(R"(gradsync_worker_memory_bytes{kind="params",rank="1",training_job="j"} 8572)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(gradsync_worker_memory_bytes{kind="grads",rank="1",training_job="j"} 8572)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(gradsync_worker_memory_bytes{kind="optimizer",rank="1",training_job="j"} 8568)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(gradsync_worker_peak_memory_bytes{kind="rss",rank="1",training_job="j"} 123456789)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find(R"(kind="device")"), std::string::npos) << "no device series on a CPU rank\n" << text;

  metrics.RecordStep(Report(4000000000));
  text = Text(metrics);
  EXPECT_NE(text.find(R"(gradsync_worker_peak_memory_bytes{kind="device",rank="1",training_job="j"} 4000000000)"),
            std::string::npos)
      << text;
}

TEST(WorkerMetricsTest, AReportWithoutMemoryMakesNoMemorySeries) {
  WorkerMetrics metrics;
  v1::StepReport r = Report(0);
  r.clear_memory();
  metrics.RecordStep(r);
  EXPECT_EQ(Text(metrics).find("gradsync_worker_memory_bytes{"), std::string::npos) << Text(metrics);
}

}  // namespace
}  // namespace gradsync::worker

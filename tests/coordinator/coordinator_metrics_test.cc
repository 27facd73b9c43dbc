#include "coordinator_metrics.h"

#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace gradsync::coordinator {
namespace {

TEST(CoordinatorMetrics, ExposesJobsWorkersAndRestarts) {
  Coordinator c({}, std::make_unique<InMemoryJobStore>());
  v1::RegisterWorkerRequest w;
  w.set_hostname("h");
  c.RegisterWorker(w);
  c.RegisterWorker(w);
  v1::JobSpec spec;
  spec.mutable_training()->set_max_steps(3);
  const std::string running = c.CreateJob(spec)->id();
  spec.mutable_training()->set_world_size(4);
  ASSERT_TRUE(c.CreateJob(spec).ok());

  CoordinatorMetrics metrics(&c);
  const std::string text = prometheus::TextSerializer().Serialize(metrics.Collect());
  EXPECT_NE(text.find("# TYPE gradsync_jobs gauge"), std::string::npos) << text;
  EXPECT_NE(text.find("gradsync_jobs{state=\"pending\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("gradsync_jobs{state=\"running\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("gradsync_jobs{state=\"failed\"} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("gradsync_workers{state=\"idle\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("gradsync_workers{state=\"assigned\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE gradsync_job_restarts_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find("gradsync_job_restarts_total{training_job=\"" + running + "\"} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("gradsync_job_running{training_job=\"" + running + "\"} 1"), std::string::npos) << text;
  EXPECT_EQ(text.find("{job="), std::string::npos) << "the label `job` belongs to Prometheus";
}

}  // namespace
}  // namespace gradsync::coordinator

#include "coordinator_metrics.h"

#include <cmath>

#include "coordinator_test_util.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace gradsync::coordinator {
namespace {

// The value of the series written `series` (name and labels) in an exposition; NaN if absent.
double ValueOf(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(text.substr(at + series.size() + 2));
}

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

// A job's state and reason, lost workers and the newest checkpoint's commit time, with a fake clock.
TEST(CoordinatorMetrics, ExposesJobStateAndReasonLostWorkersAndCheckpointAge) {
  absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  CoordinatorOptions options;
  options.lease_timeout = absl::Seconds(6);
  options.artifact_root = "/tmp/gradsync-test-artifacts";
  options.clock = [&now] { return now; };
  Coordinator c(options, std::make_unique<InMemoryJobStore>());
  const std::string w0 = RegisterTestWorker(c, "h0"), w1 = RegisterTestWorker(c, "h1");
  v1::JobSpec spec;
  spec.mutable_training()->set_world_size(2);
  spec.mutable_training()->set_max_steps(10);
  const v1::Job job = *c.CreateJob(spec);
  const v1::Assignment a0 = TakeTestAssignment(c, w0), a1 = TakeTestAssignment(c, w1);
  ASSERT_TRUE(ReportTestCheckpoint(c, w0, a0, 5).ok());
  ASSERT_TRUE(ReportTestCheckpoint(c, w1, a1, 5).ok());
  CoordinatorMetrics metrics(&c);
  std::string text = prometheus::TextSerializer().Serialize(metrics.Collect());
  const std::string label = "training_job=\"" + job.id() + "\"";
  EXPECT_NE(text.find("gradsync_workers_lost_total 0"), std::string::npos) << text;
  EXPECT_NE(text.find("gradsync_job_info{" + label + ",state=\"running\",reason=\""), std::string::npos) << text;
  EXPECT_EQ(ValueOf(text, "gradsync_checkpoint_last_commit_timestamp_seconds{" + label + "}"), 1.7e9)
      << "committed at the fake clock's time: " << text;

  // Only w0 keeps beating: w1's lease runs out, the job restarts and says why.
  now += absl::Seconds(4);
  v1::HeartbeatRequest hb;
  hb.set_worker_id(w0);
  hb.set_job_id(job.id());
  hb.set_generation(1);
  c.Heartbeat(hb);
  now += absl::Seconds(3);
  c.CheckLeases();
  text = prometheus::TextSerializer().Serialize(metrics.Collect());
  EXPECT_NE(text.find("gradsync_workers_lost_total 1"), std::string::npos) << text;
  const size_t info = text.find("gradsync_job_info{" + label + ",state=\"restarting\",reason=\"");
  ASSERT_NE(info, std::string::npos) << text;
  const std::string line = text.substr(info, text.find('\n', info) - info);
  const std::string reason = c.GetJob(job.id())->state_reason();
  EXPECT_FALSE(reason.empty());
  EXPECT_NE(line.find("reason=\"" + reason + "\"} 1"), std::string::npos) << "the job's reason: " << line;
}

}  // namespace
}  // namespace gradsync::coordinator

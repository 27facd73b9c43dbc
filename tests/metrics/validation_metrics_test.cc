// The validation loss through gradsync-metrics (in-process, real reporters, read over HTTP): the
// gradsync_validation_loss gauge follows the newest evaluated step, exists only for jobs that
// evaluate, passes promtool, and each reduced step of the JSON series carries its value.
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/telemetry/metrics_reporter.h"
#include "gtest/gtest.h"
#include "http_get.h"
#include "metrics_server.h"
#include "prometheus_text.h"

namespace gradsync::metrics {
namespace {

using testing::HttpGet;
using testing::SampleValue;

std::string Address(int port) { return absl::StrCat("127.0.0.1:", port); }

// Two ranks report steps 1..4; at steps 2 and 4 both carry the validation loss (equal on every
// rank after the worker's all-reduce) when `validate`.
void ReportSteps(const MetricsServer& server, const std::string& job, bool validate) {
  for (int32_t rank = 0; rank < 2; ++rank) {
    telemetry::MetricsReporter reporter({.address = Address(server.grpc_port())});
    for (int64_t step = 1; step <= 4; ++step) {
      v1::StepReport r;
      r.set_job_id(job);
      r.set_generation(1);
      r.set_rank(rank);
      r.set_world_size(2);
      r.set_step(step);
      r.set_loss(3.0 - 0.5 * static_cast<double>(step));
      if (validate && step % 2 == 0) r.set_validation_loss(4.0 - 0.25 * static_cast<double>(step));
      reporter.Report(r);
    }
    ASSERT_TRUE(reporter.Flush(absl::Seconds(10)).ok());
  }
}

TEST(ValidationMetricsTest, GaugeAndSeriesCarryTheValidationLoss) {
  MetricsServerOptions options;
  options.grpc_listen = options.http_listen = options.api_listen = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<MetricsServer>> server = MetricsServer::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status();
  ReportSteps(**server, "val", true);
  ReportSteps(**server, "noval", false);

  auto scrape = HttpGet(Address((*server)->http_port()), "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(SampleValue(scrape->body, R"(gradsync_validation_loss{training_job="val"})"), 3.0) << "step 4's";
  EXPECT_EQ(SampleValue(scrape->body, R"(gradsync_train_loss{training_job="val"})"), 1.0);
  EXPECT_EQ(SampleValue(scrape->body, R"(gradsync_validation_loss{training_job="noval"})"), std::nullopt)
      << "no series, not a zero, for a job that never evaluated";
  const absl::Status check = testing::PromtoolCheck(scrape->body);
  if (!absl::IsFailedPrecondition(check)) {
    EXPECT_TRUE(check.ok()) << check;
  }

  auto response = HttpGet(Address((*server)->api_port()), "/v1/jobs/val/series");
  ASSERT_TRUE(response.ok()) << response.status();
  v1::JobSeries series;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(response->body, &series).ok()) << response->body;
  ASSERT_EQ(series.steps_size(), 4);
  EXPECT_FALSE(series.steps(0).has_validation_loss());
  EXPECT_DOUBLE_EQ(series.steps(1).validation_loss(), 3.5);
  EXPECT_FALSE(series.steps(2).has_validation_loss());
  EXPECT_DOUBLE_EQ(series.steps(3).validation_loss(), 3.0);
}

}  // namespace
}  // namespace gradsync::metrics

// gradsync-metrics in-process on free ports, fed by real MetricsReporters (one per rank), read
// back over HTTP the way Prometheus and dashboards read it.
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/rpc/health.h"
#include "gradsync/telemetry/metrics_reporter.h"
#include "gtest/gtest.h"
#include "http_get.h"
#include "metrics_server.h"
#include "prometheus_text.h"

namespace gradsync::metrics {
namespace {

using testing::HttpGet;
using testing::SampleValue;

constexpr int kRanks = 2;
constexpr int kSteps = 3;

v1::StepReport Report(const std::string& job, int32_t rank, int64_t step) {
  v1::StepReport r;
  r.set_job_id(job);
  r.set_generation(1);
  r.set_rank(rank);
  r.set_world_size(kRanks);
  r.set_step(step);
  r.set_loss(2.0 - 0.25 * static_cast<double>(step) + rank);  // step 2: ranks 1.5 and 2.5
  r.set_samples(8);
  r.set_tokens(512);
  r.set_step_seconds(rank == 0 ? 0.2 : 0.25);
  r.set_compute_seconds(0.15);
  r.set_communication_seconds(0.04);
  r.set_exposed_communication_seconds(0.01);
  r.set_grad_norm(0.75);
  r.set_learning_rate(3e-4);
  r.add_buckets()->set_bytes(4096);
  return r;
}

std::string Address(int port) { return absl::StrCat("127.0.0.1:", port); }

std::unique_ptr<MetricsServer> StartServer(MetricsServerOptions options) {
  options.grpc_listen = options.http_listen = options.api_listen = "127.0.0.1:0";
  auto server = MetricsServer::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// One server for the suite, started once; each test
// reports under its own job id.
class MetricsServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = StartServer(MetricsServerOptions()).release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(server_, nullptr); }

  // Every rank reports every step through its own reporter, as workers do.
  static void ReportAllSteps(const std::string& job) {
    for (int32_t rank = 0; rank < kRanks; ++rank) {
      telemetry::MetricsReporter reporter({.address = Address(server_->grpc_port())});
      for (int64_t step = 0; step < kSteps; ++step) reporter.Report(Report(job, rank, step));
      ASSERT_TRUE(reporter.Flush(absl::Seconds(10)).ok());
    }
  }

  static std::string Scrape(const MetricsServer& server) {
    auto response = HttpGet(Address(server.http_port()), "/metrics");
    EXPECT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response.ok() ? response->status : 0, 200);
    return response.ok() ? response->body : "";
  }

  static MetricsServer* server_;
};

MetricsServer* MetricsServiceTest::server_ = nullptr;

TEST_F(MetricsServiceTest, ServesHealth) {
  EXPECT_TRUE(rpc::CheckHealth(Address(server_->grpc_port()), "", absl::Seconds(5)).ok());
}

TEST_F(MetricsServiceTest, ScrapeShowsFiguresReducedAcrossRanks) {
  ReportAllSteps("figures");
  const std::string text = Scrape(*server_);
  const std::string job = R"({training_job="figures"})";
  EXPECT_EQ(SampleValue(text, "gradsync_train_loss" + job), 2.0);  // mean of 1.5 and 2.5
  EXPECT_EQ(SampleValue(text, "gradsync_train_step" + job), 2);
  EXPECT_EQ(SampleValue(text, "gradsync_train_generation" + job), 1);
  EXPECT_EQ(SampleValue(text, "gradsync_train_samples_total" + job), kSteps * kRanks * 8);
  EXPECT_EQ(SampleValue(text, "gradsync_train_tokens_total" + job), kSteps * kRanks * 512);
  EXPECT_EQ(SampleValue(text, "gradsync_train_tokens_per_second" + job), 2 * 512 / 0.25);
  EXPECT_EQ(SampleValue(text, "gradsync_train_grad_norm" + job), 0.75);
  EXPECT_EQ(SampleValue(text, "gradsync_train_learning_rate" + job), 3e-4);
  EXPECT_EQ(SampleValue(text, "gradsync_train_step_duration_seconds_count" + job), kSteps);
  EXPECT_EQ(SampleValue(text, "gradsync_train_step_duration_seconds_sum" + job), kSteps * 0.25);
  EXPECT_EQ(SampleValue(text, "gradsync_metrics_reports_total" + job), kSteps * kRanks);
  EXPECT_EQ(SampleValue(text, "gradsync_metrics_partial_steps_total" + job), 0);
  EXPECT_EQ(SampleValue(text, "gradsync_metrics_late_reports_total" + job), 0);
  const std::string rank1 = R"({rank="1",training_job="figures"})";
  EXPECT_EQ(SampleValue(text, "gradsync_train_rank_loss" + rank1), 2.5);
  EXPECT_EQ(SampleValue(text, "gradsync_train_rank_step_duration_seconds_count" + rank1), kSteps);
  EXPECT_EQ(SampleValue(text, "gradsync_allreduce_duration_seconds_count" + rank1), kSteps);
  EXPECT_EQ(SampleValue(text, "gradsync_exposed_communication_seconds_count" + rank1), kSteps);
  EXPECT_EQ(SampleValue(text, "gradsync_allreduce_bytes_total" + rank1), kSteps * 4096);
  EXPECT_EQ(SampleValue(text, "gradsync_straggler_total" + rank1), 0);  // 0.25 < 1.5 x 0.2
  // Prometheus owns `job` and `instance`: no series may carry them.
  EXPECT_FALSE(std::regex_search(text, std::regex(R"([{,](job|instance)=")"))) << text;
}

TEST_F(MetricsServiceTest, ScrapePassesPromtool) {
  ReportAllSteps("promtool");
  absl::Status check = testing::PromtoolCheck(Scrape(*server_));
  if (absl::IsFailedPrecondition(check)) GTEST_SKIP() << check;
  EXPECT_TRUE(check.ok()) << check;
}

TEST_F(MetricsServiceTest, JsonSeriesHoldsTheReducedSteps) {
  ReportAllSteps("json");
  auto response = HttpGet(Address(server_->api_port()), "/v1/jobs/json/series?limit=2");
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->status, 200) << response->body;
  v1::JobSeries series;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(response->body, &series).ok()) << response->body;
  EXPECT_EQ(series.job_id(), "json");
  EXPECT_EQ(series.reports(), kSteps * kRanks);
  ASSERT_EQ(series.steps_size(), 2);
  EXPECT_EQ(series.steps(0).step(), 1);
  EXPECT_EQ(series.steps(1).step(), 2);
  EXPECT_DOUBLE_EQ(series.steps(1).loss(), 2.0);
  EXPECT_EQ(series.steps(1).slowest_rank(), 1);

  auto jobs = HttpGet(Address(server_->api_port()), "/v1/jobs");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  v1::JobList list;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(jobs->body, &list).ok()) << jobs->body;
  EXPECT_THAT(list.job_ids(), ::testing::Contains("json"));
}

TEST_F(MetricsServiceTest, JsonApiAnswersErrorsAsJson) {
  const std::string api = Address(server_->api_port());
  auto missing = HttpGet(api, "/v1/jobs/nope/series");
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(missing->status, 404);
  google::protobuf::Struct error;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(missing->body, &error).ok()) << missing->body;
  EXPECT_EQ(error.fields().at("code").number_value(), 5);  // NOT_FOUND
  EXPECT_EQ(error.fields().at("message").string_value(), "no step reports for job nope");
  auto bad_limit = HttpGet(api, "/v1/jobs/json/series?limit=many");
  ASSERT_TRUE(bad_limit.ok()) << bad_limit.status();
  EXPECT_EQ(bad_limit->status, 400);
  auto other = HttpGet(api, "/v1/jobs/json/weights");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->status, 404);
}

// With the cluster token set, a stream without it (or with another) is refused before any report
// is read: no one but the workers can fake a job's figures.
TEST(MetricsServiceAuthTest, AReportWithoutTheClusterTokenChangesNothing) {
  MetricsServerOptions options;
  options.report_auth = TokenAuth("cluster-secret");
  std::unique_ptr<MetricsServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  for (const std::string token : {"", "not-the-cluster-secret"}) {
    telemetry::MetricsReporter forger({.address = Address(server->grpc_port()),
                                       .bearer_token = token,
                                       .initial_backoff = absl::Milliseconds(50),
                                       .max_backoff = absl::Milliseconds(200),
                                       .close_drain = absl::ZeroDuration()});
    forger.Report(Report("forged", 0, 0));
    // Without the token check the report is confirmed, so ingested, before Flush returns.
    (void)forger.Flush(absl::Seconds(1));
  }
  EXPECT_FALSE(server->collector().Series("forged", 0).ok());

  telemetry::MetricsReporter worker({.address = Address(server->grpc_port()), .bearer_token = "cluster-secret"});
  worker.Report(Report("honest", 0, 0));
  ASSERT_TRUE(worker.Flush(absl::Seconds(10)).ok());
  EXPECT_TRUE(server->collector().Series("honest", 0).ok());
}

TEST(MetricsServiceTimeoutTest, SilentRankMakesAPartialStepAfterTheTimeout) {
  MetricsServerOptions options;
  options.reducer.step_timeout = absl::Milliseconds(200);
  options.tick_interval = absl::Milliseconds(20);
  std::unique_ptr<MetricsServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(server->collector().Ingest(Report("silent", 0, 0)).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  std::optional<double> partial;
  while (absl::Now() < deadline) {
    auto scrape = HttpGet(Address(server->http_port()), "/metrics");
    ASSERT_TRUE(scrape.ok()) << scrape.status();
    partial = SampleValue(scrape->body, R"(gradsync_metrics_partial_steps_total{training_job="silent"})");
    if (partial == 1) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(partial, 1);
  auto series = server->collector().Series("silent", 0);
  ASSERT_TRUE(series.ok()) << series.status();
  ASSERT_EQ(series->steps_size(), 1);
  EXPECT_THAT(series->steps(0).missing_ranks(), ::testing::ElementsAre(1));
}

}  // namespace
}  // namespace gradsync::metrics

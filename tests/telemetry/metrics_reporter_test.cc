// MetricsReporter against the real metrics service started in-process: delivery, the
// non-blocking contract while the service is down, and recovery when it comes back.
#include "gradsync/telemetry/metrics_reporter.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "metrics_server.h"
#include "ports.h"

namespace gradsync::telemetry {
namespace {

std::unique_ptr<metrics::MetricsServer> StartService(const std::string& grpc_address) {
  metrics::MetricsServerOptions options;
  options.grpc_listen = grpc_address;
  options.http_listen = options.api_listen = "127.0.0.1:0";
  auto server = metrics::MetricsServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// World size 1, so that every report is a whole step the service publishes at once.
v1::StepReport Report(int64_t step, int32_t rank = 0, int32_t world_size = 1) {
  v1::StepReport r;
  r.set_job_id("job");
  r.set_generation(1);
  r.set_rank(rank);
  r.set_world_size(world_size);
  r.set_step(step);
  r.set_loss(1.0);
  r.set_step_seconds(0.1);
  return r;
}

std::vector<int64_t> PublishedSteps(metrics::MetricsServer& server) {
  std::vector<int64_t> steps;
  auto series = server.collector().Series("job", 0);
  if (!series.ok()) return steps;
  for (const v1::ReducedStep& s : series->steps()) steps.push_back(s.step());
  return steps;
}

MetricsReporterOptions FastRetry(const std::string& address) {
  MetricsReporterOptions options;
  options.address = address;
  options.initial_backoff = absl::Milliseconds(20);
  options.max_backoff = absl::Milliseconds(200);
  options.close_drain = absl::Milliseconds(100);
  return options;
}

TEST(MetricsReporterTest, EmptyAddressDisablesReporting) {
  MetricsReporter reporter(MetricsReporterOptions{});
  EXPECT_FALSE(reporter.enabled());
  reporter.Report(Report(0));
  EXPECT_TRUE(reporter.Flush(absl::ZeroDuration()).ok());
  EXPECT_EQ(reporter.stats().reported, 0);
}

TEST(MetricsReporterTest, ReportsOfEveryRankArriveAndAreReduced) {
  auto server = StartService("127.0.0.1:0");
  ASSERT_NE(server, nullptr);
  const std::string address = absl::StrCat("127.0.0.1:", server->grpc_port());
  MetricsReporter rank0(FastRetry(address)), rank1(FastRetry(address));
  for (int64_t step = 0; step < 4; ++step) {
    rank0.Report(Report(step, 0, 2));
    rank1.Report(Report(step, 1, 2));
  }
  ASSERT_TRUE(rank0.Flush(absl::Seconds(10)).ok());
  ASSERT_TRUE(rank1.Flush(absl::Seconds(10)).ok());
  EXPECT_EQ(PublishedSteps(*server), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(rank0.stats().sent, 4);
  EXPECT_EQ(rank0.stats().dropped, 0);
}

TEST(MetricsReporterTest, ServiceDownNeverBlocksAndQueuedReportsArriveWhenItReturns) {
  const std::string address = absl::StrCat("127.0.0.1:", testing::FreePort());
  MetricsReporterOptions options = FastRetry(address);
  options.queue_capacity = 1000;
  MetricsReporter reporter(options);

  // The contract is "never waits for the network", checked with a bound far above a queue push
  // (about 1 ms for 10k calls) and far below a wait per call on a service that is down (every
  // connection attempt costs at least a round trip to the kernel and a backoff): 10k calls in
  // 250 ms, best of three rounds, so that a busy machine descheduling the test does not fail it.
  constexpr int kCalls = 10'000;
  constexpr int kRounds = 3;
  const v1::StepReport report = Report(0);
  absl::Duration best = absl::InfiniteDuration();
  int64_t step = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<v1::StepReport> batch(kCalls, report);
    for (v1::StepReport& r : batch) r.set_step(step++);
    const auto start = std::chrono::steady_clock::now();
    for (v1::StepReport& r : batch) reporter.Report(std::move(r));
    best = std::min(best, absl::FromChrono(std::chrono::steady_clock::now() - start));
  }
  ::testing::Test::RecordProperty("best_round_us", static_cast<int>(absl::ToInt64Microseconds(best)));
  EXPECT_LT(best, absl::Milliseconds(250)) << "Report() took " << best << " for " << kCalls << " calls";

  EXPECT_EQ(reporter.Flush(absl::Milliseconds(300)).code(), absl::StatusCode::kDeadlineExceeded);
  MetricsReporterStats down = reporter.stats();
  EXPECT_EQ(down.reported, kRounds * kCalls);
  EXPECT_GE(down.dropped, kRounds * kCalls - 1001);  // the queue, plus one report in flight
  EXPECT_GE(down.stream_failures, 1);
  EXPECT_FALSE(down.connected);

  auto server = StartService(address);
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(reporter.Flush(absl::Seconds(20)).ok());
  MetricsReporterStats up = reporter.stats();
  EXPECT_EQ(up.sent + up.dropped, up.reported);
  std::vector<int64_t> steps = PublishedSteps(*server);
  // The newest 1000 survived the outage (plus, perhaps, the report in flight when it began).
  ASSERT_GE(steps.size(), 1000u);
  EXPECT_LE(steps.size(), 1001u);
  EXPECT_EQ(steps.back(), kRounds * kCalls - 1);
  EXPECT_EQ(steps[steps.size() - 1000], kRounds * kCalls - 1000);
}

TEST(MetricsReporterTest, ReportsResumeOnANewStreamAfterTheServiceRestarts) {
  const std::string address = absl::StrCat("127.0.0.1:", testing::FreePort());
  auto first = StartService(address);
  ASSERT_NE(first, nullptr);
  MetricsReporter reporter(FastRetry(address));
  for (int64_t step = 0; step < 10; ++step) reporter.Report(Report(step));
  // Wait without Flush(), so that the stream stays open across the restart.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (PublishedSteps(*first).size() < 10 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ(PublishedSteps(*first).size(), 10u);
  EXPECT_TRUE(reporter.stats().connected);

  first.reset();
  auto second = StartService(address);
  ASSERT_NE(second, nullptr);
  for (int64_t step = 10; step < 20; ++step) reporter.Report(Report(step));
  ASSERT_TRUE(reporter.Flush(absl::Seconds(20)).ok());
  std::vector<int64_t> expected(10);
  for (int i = 0; i < 10; ++i) expected[static_cast<size_t>(i)] = 10 + i;
  EXPECT_EQ(PublishedSteps(*second), expected);
  MetricsReporterStats stats = reporter.stats();
  EXPECT_GE(stats.stream_failures, 1);
  // The first stream broke before anyone asked the service to confirm what it carried.
  EXPECT_EQ(stats.unconfirmed, 10);
}

TEST(MetricsReporterTest, DestructorGivesUpOnAnUnreachableServiceAfterTheDrain) {
  const auto start = std::chrono::steady_clock::now();
  {
    MetricsReporter reporter(FastRetry(absl::StrCat("127.0.0.1:", testing::FreePort())));
    for (int64_t step = 0; step < 100; ++step) reporter.Report(Report(step));
  }
  // close_drain is 100 ms; the bound only tells "returned" from "hung".
  EXPECT_LT(absl::FromChrono(std::chrono::steady_clock::now() - start), absl::Seconds(10));
}

TEST(MetricsReporterTest, ReportAfterCloseIsDiscarded) {
  MetricsReporter reporter(FastRetry(absl::StrCat("127.0.0.1:", testing::FreePort())));
  reporter.Close(absl::ZeroDuration());
  reporter.Report(Report(0));
  EXPECT_EQ(reporter.stats().reported, 0);
}

}  // namespace
}  // namespace gradsync::telemetry

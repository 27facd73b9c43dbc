// The series store on real SQLite files: what the writer puts in comes back, a bad file is moved
// aside, retention deletes, a locked database loses nothing, and a server started again on the
// same directory serves the same series.
#include "series_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gradsync/telemetry/metrics_reporter.h"
#include "gtest/gtest.h"
#include "metrics_server.h"
#include "series_writer.h"

namespace gradsync::metrics {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

std::string FreshDir() {
  static int n = 0;
  const fs::path dir = fs::path(::testing::TempDir()) / absl::StrCat("series-store-", getpid(), "-", n++);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

v1::StepReport Report(const std::string& job, int64_t step, int32_t generation = 1) {
  v1::StepReport r;
  r.set_job_id(job);
  r.set_generation(generation);
  r.set_rank(0);
  r.set_world_size(1);
  r.set_step(step);
  r.set_loss(5.0 / static_cast<double>(step + 1));
  r.set_tokens(100);
  r.set_step_seconds(0.1);
  return r;
}

telemetry::StepReducerOptions SmallSeries() {
  telemetry::StepReducerOptions o;
  o.series_capacity = 40;
  o.series_recent = 10;
  o.track_series_changes = true;
  return o;
}

std::vector<std::string> Serialized(const v1::JobSeries& s) {
  std::vector<std::string> out;
  for (const v1::ReducedStep& p : s.steps()) out.push_back(p.SerializeAsString());
  return out;
}

// The collector's series, written by the writer and read back from the store alone, as a
// collector that no longer tracks the job serves it.
TEST(SeriesStore, WhatTheWriterWritesComesBackWhole) {
  const std::string dir = FreshDir();
  auto store = SeriesStore::Open(dir + "/series.db");
  ASSERT_TRUE(store.ok()) << store.status();
  TrainingMetrics metrics;
  MetricsCollector collector(SmallSeries(), &metrics);
  ASSERT_TRUE(collector.UseStore(store->get()).ok());
  SeriesWriter writer(&collector, store->get(), &metrics, {});
  for (int64_t step = 0; step < 1000; ++step) {
    ASSERT_TRUE(collector.Ingest(Report("a", step)).ok());
    if (step % 37 == 0) {
      ASSERT_TRUE(writer.Flush().ok());
    }
  }
  ASSERT_TRUE(collector.Ingest(Report("b", 0)).ok());
  ASSERT_TRUE(writer.Flush().ok());
  auto live = collector.Series("a", 0);
  ASSERT_TRUE(live.ok());
  ASSERT_LE(live->steps_size(), 40);

  auto stored = (*store)->Load("a");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->counters.reports(), 1000);
  ASSERT_THAT(stored->points, SizeIs(live->steps_size()));
  for (int i = 0; i < live->steps_size(); ++i) {
    EXPECT_EQ(stored->points[i].step.SerializeAsString(), live->steps(i).SerializeAsString()) << i;
  }
  EXPECT_THAT(*(*store)->JobIds(), ElementsAre("a", "b"));
  EXPECT_EQ((*store)->Load("c").status().code(), absl::StatusCode::kNotFound);
}

TEST(SeriesStore, AFileThatIsNotADatabaseIsMovedAsideAndAnEmptyOneStarts) {
  const std::string dir = FreshDir(), path = dir + "/series.db";
  { std::ofstream(path) << "not a database at all, but someone's notes"; }
  EXPECT_EQ(SeriesStore::Open(path).status().code(), absl::StatusCode::kDataLoss);
  auto store = SeriesStore::OpenOrSetAside(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_THAT(*(*store)->JobIds(), ::testing::IsEmpty());
  std::vector<std::string> aside;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with("series.db.bad-")) aside.push_back(entry.path().string());
  }
  ASSERT_THAT(aside, SizeIs(1));
  EXPECT_EQ(ReadFile(aside[0]), "not a database at all, but someone's notes");
}

TEST(SeriesStore, ACorruptDatabaseIsMovedAside) {
  const std::string dir = FreshDir(), path = dir + "/series.db";
  {
    auto store = SeriesStore::Open(path);
    ASSERT_TRUE(store.ok());
    std::vector<telemetry::SeriesChanges> changes(1);
    changes[0].job_id = "a";
    changes[0].counters.set_job_id("a");
    for (int64_t i = 0; i < 2000; ++i) {
      v1::ReducedStep s = (v1::ReducedStep());
      s.set_step(i);
      s.set_job_id(std::string(200, 'x'));
      changes[0].points.upserted.push_back({i, s});
    }
    ASSERT_TRUE((*store)->Apply(changes).ok());
  }
  // Pages past the header overwritten: a disk that lost writes.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 * 3);
    const std::string junk(4096 * 4, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  const absl::Status opened = SeriesStore::Open(path).status();
  EXPECT_EQ(opened.code(), absl::StatusCode::kDataLoss) << opened;
  EXPECT_THAT(opened.message(), HasSubstr(path));
  auto store = SeriesStore::OpenOrSetAside(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_THAT(*(*store)->JobIds(), ::testing::IsEmpty());
}

TEST(SeriesStore, ADatabaseOfAnotherKindIsNotTakenForOne) {
  const std::string path = FreshDir() + "/series.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE jobs (id TEXT);", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const absl::Status opened = SeriesStore::Open(path).status();
  EXPECT_EQ(opened.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(opened.message(), HasSubstr("not a gradsync series database"));
}

TEST(SeriesStore, RetentionDeletesJobsWithoutRecentReportsButTrackedOnes) {
  auto store = SeriesStore::Open(FreshDir() + "/series.db");
  ASSERT_TRUE(store.ok());
  const absl::Time now = absl::Now();
  std::vector<telemetry::SeriesChanges> changes;
  for (const auto& [id, age] : std::vector<std::pair<std::string, absl::Duration>>{
           {"old", absl::Hours(24 * 40)}, {"old-but-tracked", absl::Hours(24 * 40)}, {"new", absl::Hours(1)}}) {
    telemetry::SeriesChanges c;
    c.job_id = id;
    c.counters.set_job_id(id);
    c.last_report = now - age;
    c.points.upserted.push_back({0, v1::ReducedStep()});
    changes.push_back(c);
  }
  ASSERT_TRUE((*store)->Apply(changes).ok());
  auto deleted = (*store)->DeleteReportedBefore(now - absl::Hours(24 * 30), {"old-but-tracked"});
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_THAT(*deleted, ElementsAre("old"));
  EXPECT_THAT(*(*store)->JobIds(), ElementsAre("new", "old-but-tracked"));
}

// Another process holds the database: the flush fails after the busy timeout, keeps nothing
// half-written, and the next flush writes the job whole.
TEST(SeriesStore, AFlushTheDatabaseRefusedIsWrittenWholeLater) {
  const std::string path = FreshDir() + "/series.db";
  auto store = SeriesStore::Open(path);
  ASSERT_TRUE(store.ok());
  TrainingMetrics metrics;
  MetricsCollector collector(SmallSeries(), &metrics);
  ASSERT_TRUE(collector.UseStore(store->get()).ok());
  SeriesWriter writer(&collector, store->get(), &metrics, {});
  for (int64_t step = 0; step < 100; ++step) ASSERT_TRUE(collector.Ingest(Report("a", step)).ok());
  ASSERT_TRUE(writer.Flush().ok());

  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE;", nullptr, nullptr, nullptr), SQLITE_OK);
  for (int64_t step = 100; step < 300; ++step) ASSERT_TRUE(collector.Ingest(Report("a", step)).ok());
  const absl::Status refused = writer.Flush();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_THAT(refused.message(), HasSubstr(path));
  ASSERT_EQ(sqlite3_exec(other, "ROLLBACK;", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);

  for (int64_t step = 300; step < 310; ++step) ASSERT_TRUE(collector.Ingest(Report("a", step)).ok());
  ASSERT_TRUE(writer.Flush().ok());
  auto live = collector.Series("a", 0);
  auto stored = (*store)->Load("a");
  ASSERT_TRUE(live.ok() && stored.ok());
  v1::JobSeries from_disk;
  for (const auto& p : stored->points) *from_disk.add_steps() = p.step;
  EXPECT_EQ(Serialized(from_disk), Serialized(*live));
  EXPECT_EQ(stored->counters.reports(), 310);
}

std::unique_ptr<MetricsServer> StartServer(const std::string& state_dir) {
  MetricsServerOptions options;
  options.grpc_listen = options.http_listen = options.api_listen = "127.0.0.1:0";
  options.state_dir = state_dir;
  options.reducer = SmallSeries();
  auto server = MetricsServer::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

void ReportSteps(const MetricsServer& server, const std::string& job, int64_t from, int64_t to) {
  telemetry::MetricsReporter reporter({.address = absl::StrCat("127.0.0.1:", server.grpc_port())});
  for (int64_t step = from; step < to; ++step) reporter.Report(Report(job, step));
  ASSERT_TRUE(reporter.Flush(absl::Seconds(10)).ok());
}

TEST(SeriesStore, AServerStartedAgainServesTheSameSeriesAndGoesOn) {
  const std::string dir = FreshDir();
  v1::JobSeries before;
  {
    std::unique_ptr<MetricsServer> server = StartServer(dir);
    ASSERT_NE(server, nullptr);
    ReportSteps(*server, "j", 0, 500);
    auto s = server->collector().Series("j", 0);
    ASSERT_TRUE(s.ok());
    before = *s;
    server->Shutdown(absl::Seconds(1));  // writes the last changes
  }
  std::unique_ptr<MetricsServer> server = StartServer(dir);
  ASSERT_NE(server, nullptr);
  auto after = server->collector().Series("j", 0);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->SerializeAsString(), before.SerializeAsString());
  // The run goes on where it stopped: a step the old server had is late, the next is new.
  ReportSteps(*server, "j", 499, 510);
  auto more = server->collector().Series("j", 0);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(more->steps(more->steps_size() - 1).step(), 509);
  EXPECT_EQ(more->late_reports(), before.late_reports() + 1);
  int64_t merged = 0;
  for (const auto& p : more->steps()) merged += p.merged_steps();
  EXPECT_EQ(merged, 510);
}

TEST(SeriesStore, AJobForgottenWhileIdleComesBackWithItsSeries) {
  const std::string dir = FreshDir();
  MetricsServerOptions options;
  options.grpc_listen = options.http_listen = options.api_listen = "127.0.0.1:0";
  options.state_dir = dir;
  options.reducer = SmallSeries();
  absl::Time now = absl::Now();
  options.reducer.clock = [&now] { return now; };
  options.reducer.job_idle_ttl = absl::Minutes(5);
  options.tick_interval = absl::Milliseconds(10);
  auto server = MetricsServer::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status();
  ReportSteps(**server, "idle", 0, 100);
  now += absl::Minutes(6);
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline && !(*server)->collector().TrackedJobs().empty())
    absl::SleepFor(absl::Milliseconds(10));
  ASSERT_THAT((*server)->collector().TrackedJobs(), ::testing::IsEmpty()) << "the idle job was not forgotten";
  // Served from the store meanwhile, and listed.
  auto stored = (*server)->collector().Series("idle", 0);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->steps(stored->steps_size() - 1).step(), 99);
  EXPECT_THAT((*server)->collector().Jobs().job_ids(), ElementsAre("idle"));
  ReportSteps(**server, "idle", 100, 110);
  auto back = (*server)->collector().Series("idle", 0);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->steps(0).step(), 0);
  int64_t merged = 0;
  for (const auto& p : back->steps()) merged += p.merged_steps();
  EXPECT_EQ(merged, 110);
}

}  // namespace
}  // namespace gradsync::metrics

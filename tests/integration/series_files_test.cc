// A job's curves outlive its cluster, with real processes: `gradsync run` leaves series.jsonl
// beside the weights and `gradsync report` draws from it once the cluster is gone; -o picks the
// format by extension; a local cluster's metrics service killed with SIGKILL comes back, started
// again by the supervisor, with the same series.
#include <signal.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gradsync/cluster/local_cluster_file.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Lines(const std::string& text) { return absl::StrSplit(text, '\n', absl::SkipEmpty()); }

TEST(SeriesFiles, RunLeavesTheSeriesAndReportDrawsItOnceTheClusterIsGone) {
  const std::string dir = MakeTempDir();
  CommandResult run = RunBinary({"gradsync", "run", ExamplePath("mlp.yaml"), "-o", "json", "--state-dir", dir, "--set",
                                 "training.maxSteps=40", "--set", "training.epochs=0"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  std::map<std::string, std::string> summary = ParseFlatJson(run.out);
  const std::string id = summary["id"];
  ASSERT_FALSE(id.empty()) << run.out;

  // Beside the weights, one point a line, from the first step to the last.
  const std::string series = (fs::path(dir) / "artifacts" / id / "series.jsonl").string();
  ASSERT_TRUE(fs::exists(fs::path(summary["weightsPath"]).parent_path() / "series.jsonl")) << summary["weightsPath"];
  const std::vector<std::string> points = Lines(ReadFile(series));
  ASSERT_GE(points.size(), 2u) << series;
  EXPECT_TRUE(absl::StrContains(points.back(), absl::StrCat("\"step\":\"", summary["globalStep"], "\"")))
      << "the last step reached the file: " << points.back();
  EXPECT_TRUE(absl::StrContains(points.front(), absl::StrCat("\"jobId\":\"", id, "\""))) << points.front();

  // The cluster is gone: no cluster file, none of its processes.
  EXPECT_FALSE(fs::exists(cluster::LocalClusterFilePath(dir)));

  const std::string svg = dir + "/curve.svg";
  CommandResult report = RunBinary({"gradsync", "report", id, "--state-dir", dir, "-o", svg});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(absl::StrContains(report.out, absl::StrCat("from ", series))) << report.out;
  const std::string picture = ReadFile(svg);
  EXPECT_TRUE(absl::StrContains(picture, "<polyline")) << picture;
  EXPECT_FALSE(absl::StrContains(picture, "no data")) << "both curves must have points";

  // The same series as data, by extension; --artifact-root finds it without the state dir.
  const std::string csv = dir + "/curve.CSV";
  report = RunBinary({"gradsync", "report", "jobs/" + id, "--artifact-root", dir + "/artifacts", "-o", csv});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::vector<std::string> rows = Lines(ReadFile(csv));
  ASSERT_EQ(rows.size(), points.size() + 1);
  EXPECT_TRUE(absl::StartsWith(rows[0], "generation,step,first_step,merged_steps,epoch,loss,")) << rows[0];
  const std::string jsonl = dir + "/copy.jsonl";
  report = RunBinary({"gradsync", "report", id, "--state-dir", dir, "-o", jsonl});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(ReadFile(jsonl), ReadFile(series));

  // Any other extension is a usage error naming the accepted ones, and writes nothing.
  const std::string png = dir + "/curve.png";
  report = RunBinary({"gradsync", "report", id, "--state-dir", dir, "-o", png});
  EXPECT_EQ(report.exit_code, 2) << report.out << report.err;
  EXPECT_TRUE(absl::StrContains(report.err, ".csv, .jsonl or .svg")) << report.err;
  EXPECT_FALSE(fs::exists(png));

  // A job no one knows: what was tried.
  report = RunBinary({"gradsync", "report", "jobs/nosuch", "--state-dir", dir, "-o", dir + "/x.svg"});
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(report.err, dir + "/artifacts/nosuch/series.jsonl")) << report.err;
}

// The newest step the job has in the metrics service's database, read as another process would.
int64_t StoredNewestStep(const std::string& db_path, const std::string& id) {
  sqlite3* db = nullptr;
  int64_t newest = -1;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT max(step) FROM points WHERE job_id = ?1;", -1, &stmt, nullptr) == SQLITE_OK) {
      sqlite3_bind_text(stmt, 1, id.c_str(), -1, SQLITE_TRANSIENT);
      if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL) {
        newest = sqlite3_column_int64(stmt, 0);
      }
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return newest;
}

TEST(SeriesFiles, ALocalClusterMetricsServiceKilledComesBackWithTheSameSeries) {
  const std::string dir = MakeTempDir();
  ASSERT_EQ(RunBinary({"gradsync", "local", "up", "--workers", "2", "--state-dir", dir}).exit_code, 0);
  CommandResult submitted = RunBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--state-dir", dir, "--set",
                                       "training.maxSteps=30", "--set", "training.epochs=0"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job = submitted.out.substr(0, submitted.out.find('\n'));
  CommandResult watched = RunBinary({"gradsync", "watch", job, "--state-dir", dir, "-o", "json"});
  ASSERT_EQ(ParseFlatJson(watched.out)["state"], "SUCCEEDED") << watched.out << watched.err;
  const int64_t last = std::stoll(ParseFlatJson(watched.out)["globalStep"]);

  // Written to <state-dir>/metrics/series.db within a second of the last report.
  const std::string db = dir + "/metrics/series.db";
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline && StoredNewestStep(db, job.substr(5)) != last) absl::SleepFor(absl::Milliseconds(100));
  ASSERT_EQ(StoredNewestStep(db, job.substr(5)), last);
  const std::string before = dir + "/before.jsonl";
  CommandResult report = RunBinary({"gradsync", "report", job, "--state-dir", dir, "-o", before});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  ASSERT_TRUE(absl::StrContains(report.out, "from the metrics service")) << report.out;

  absl::StatusOr<cluster::LocalClusterFile> cluster = cluster::ReadLocalClusterFile(dir);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ASSERT_GE(cluster->pids.size(), 2u);
  const pid_t metrics = cluster->pids[1];
  ASSERT_EQ(::kill(metrics, SIGKILL), 0);
  // The supervisor starts it again on the same ports and rewrites the cluster file.
  pid_t restarted = metrics;
  const absl::Time back = absl::Now() + absl::Seconds(30);
  while (absl::Now() < back && (restarted == metrics || !ProcessAlive(restarted))) {
    absl::SleepFor(absl::Milliseconds(100));
    if (auto c = cluster::ReadLocalClusterFile(dir); c.ok() && c->pids.size() >= 2) restarted = c->pids[1];
  }
  ASSERT_NE(restarted, metrics) << "the metrics service was not started again";

  const std::string after = dir + "/after.jsonl";
  const absl::Time serving = absl::Now() + absl::Seconds(30);
  for (;;) {
    report = RunBinary({"gradsync", "report", job, "--state-dir", dir, "-o", after});
    if (report.exit_code == 0 || absl::Now() > serving) break;
    absl::SleepFor(absl::Milliseconds(200));  // until the new process serves
  }
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(absl::StrContains(report.out, "from the metrics service")) << report.out;
  EXPECT_EQ(ReadFile(after), ReadFile(before));
  EXPECT_EQ(RunBinary({"gradsync", "local", "down", "--state-dir", dir}).exit_code, 0);
}

}  // namespace
}  // namespace gradsync::testing

// The gradsync-metrics binary with --state_dir: killed with SIGKILL and started again on the same
// directory it serves the same series; started on a file that is not a database it says so,
// naming the file, moves it aside and serves.
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/telemetry/metrics_reporter.h"
#include "gtest/gtest.h"
#include "http_get.h"

namespace gradsync::metrics {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One gradsync-metrics process on free loopback ports, its output in `log`.
class MetricsProcess {
 public:
  MetricsProcess(const std::string& state_dir, const std::string& log) {
    const std::string endpoints = absl::StrCat(state_dir, "-endpoints.json");
    std::remove(endpoints.c_str());
    const std::string binary = absl::StrCat(GRADSYNC_BIN_DIR, "/gradsync-metrics");
    std::vector<std::string> args = {binary,
                                     "--listen=127.0.0.1:0",
                                     "--http_listen=127.0.0.1:0",
                                     "--api_listen=127.0.0.1:0",
                                     "--state_dir=" + state_dir,
                                     "--series_capacity=100",
                                     "--series_recent_steps=20",
                                     "--endpoints_file=" + endpoints};
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    google::protobuf::Struct ep;
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline && !google::protobuf::util::JsonStringToMessage(ReadFile(endpoints), &ep).ok()) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    if (ep.fields().contains("api")) {
      grpc_ = ep.fields().at("grpc").string_value();
      api_ = ep.fields().at("api").string_value();
    }
  }
  ~MetricsProcess() { Kill(SIGKILL); }

  bool serving() const { return !api_.empty(); }
  const std::string& grpc() const { return grpc_; }

  std::string Series(const std::string& job) const {
    auto r = testing::HttpGet(api_, absl::StrCat("/v1/jobs/", job, "/series"));
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r.ok() ? r->status : 0, 200) << (r.ok() ? r->body : "");
    return r.ok() ? r->body : "";
  }

  void Kill(int signal) {
    if (pid_ <= 0) return;
    kill(pid_, signal);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  std::string grpc_, api_;
};

v1::StepReport Report(int64_t step) {
  v1::StepReport r;
  r.set_job_id("curve");
  r.set_generation(1);
  r.set_world_size(1);
  r.set_step(step);
  r.set_loss(3.0 + 7.0 / static_cast<double>(step + 1));
  r.set_tokens(2048);
  r.set_step_seconds(0.05);
  r.set_learning_rate(1e-3);
  if (step % 100 == 99) r.set_validation_loss(4.0 + 1.0 / static_cast<double>(step));
  return r;
}

// The newest step of the job and its report count in the database, read as another process would.
std::pair<int64_t, int64_t> Written(const std::string& db_path) {
  sqlite3* db = nullptr;
  std::pair<int64_t, int64_t> out{-1, -1};
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT max(step), count(*) FROM points WHERE job_id = 'curve';", -1, &stmt, nullptr) ==
            SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_int64(stmt, 1) > 0) {
      out.first = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    stmt = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs;", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      out.second = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return out;
}

std::string FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / absl::StrCat(name, "-", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

TEST(MetricsRestart, KilledAndStartedAgainOnItsStateDirItServesTheSameSeries) {
  const std::string dir = FreshDir("metrics-restart");
  const std::string log = dir + ".log";
  constexpr int64_t kSteps = 1500;
  std::string before;
  {
    MetricsProcess first(dir, log);
    ASSERT_TRUE(first.serving()) << ReadFile(log);
    telemetry::MetricsReporter reporter({.address = first.grpc()});
    for (int64_t step = 0; step < kSteps; ++step) reporter.Report(Report(step));
    ASSERT_TRUE(reporter.Flush(absl::Seconds(20)).ok());
    // Written within the flush interval (1 s); SIGKILL then loses nothing.
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline && Written(dir + "/series.db").first != kSteps - 1) {
      absl::SleepFor(absl::Milliseconds(50));
    }
    ASSERT_EQ(Written(dir + "/series.db").first, kSteps - 1) << ReadFile(log);
    before = first.Series("curve");
    first.Kill(SIGKILL);
  }
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(before, &parsed).ok()) << before;
  const auto& steps = parsed.fields().at("steps").list_value().values();
  ASSERT_LE(steps.size(), 100) << "--series_capacity bounds the points";
  EXPECT_EQ(steps[0].struct_value().fields().at("step").string_value(), "0") << "the first step is kept";
  EXPECT_EQ(steps[steps.size() - 1].struct_value().fields().at("step").string_value(), absl::StrCat(kSteps - 1));

  MetricsProcess second(dir, log);
  ASSERT_TRUE(second.serving()) << ReadFile(log);
  EXPECT_EQ(second.Series("curve"), before);
}

TEST(MetricsRestart, AFileThatIsNotADatabaseIsNamedMovedAsideAndTheServiceStarts) {
  const std::string dir = FreshDir("metrics-bad-db");
  const std::string log = dir + ".log";
  const std::string db = dir + "/series.db";
  { std::ofstream(db) << "half a file from a full disk"; }
  MetricsProcess process(dir, log);
  ASSERT_TRUE(process.serving()) << ReadFile(log);
  const std::string text = ReadFile(log);
  EXPECT_TRUE(absl::StrContains(text, absl::StrCat("series database ", db, " is not a SQLite database"))) << text;
  int aside = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!absl::StartsWith(entry.path().filename().string(), "series.db.bad-")) continue;
    ++aside;
    EXPECT_EQ(ReadFile(entry.path().string()), "half a file from a full disk");
    EXPECT_TRUE(absl::StrContains(text, entry.path().string())) << "the log names where it went: " << text;
  }
  EXPECT_EQ(aside, 1);
  // The new database takes the series.
  telemetry::MetricsReporter reporter({.address = process.grpc()});
  reporter.Report(Report(0));
  ASSERT_TRUE(reporter.Flush(absl::Seconds(20)).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline && Written(db).first != 0) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(Written(db), std::make_pair(int64_t{0}, int64_t{1}));
}

}  // namespace
}  // namespace gradsync::metrics

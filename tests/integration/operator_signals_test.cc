// What an operator sees of the real binaries: --help and --version of the daemons, `gradsync
// version`, the format of their log lines, and the build and process series of every /metrics.
#include <signal.h>
#include <sys/wait.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli_harness.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "http_get.h"
#include "prometheus_text.h"

namespace gradsync::testing {
namespace {

struct Daemon {
  std::string binary;
  std::string own_flag;    // defined in its main.cc
  std::string other_flag;  // another daemon's, which its --help must not list
};

const std::vector<Daemon>& Daemons() {
  static const std::vector<Daemon> daemons = {{"gradsync-coordinator", "--artifact-root", "--coordinator"},
                                              {"gradsync-worker", "--coordinator", "--artifact-root"},
                                              {"gradsync-metrics", "--http-listen", "--artifact-root"}};
  return daemons;
}

// "<program> 0.1.0 (commit 1a2b3c4, CUDA 12.6)" or "... no CUDA)", and a newline.
std::regex VersionLine(const std::string& program) {
  return std::regex(absl::StrCat(program, " ",
                                 std::regex_replace(GRADSYNC_PROJECT_VERSION, std::regex(R"(\.)"), R"(\.)"),
                                 R"( \(commit ([0-9a-f]{7,40}|unknown), (CUDA \d+\.\d+|no CUDA)\)\n)"));
}

std::vector<std::string> Lines(const std::string& text) { return absl::StrSplit(text, '\n', absl::SkipEmpty()); }

TEST(DaemonFlags, HelpListsTheDaemonsOwnFlagsAndExitsZero) {
  for (const Daemon& d : Daemons()) {
    const CommandResult help = RunBinary({d.binary, "--help"});
    EXPECT_EQ(help.exit_code, 0) << d.binary << ": " << help.err;
    EXPECT_TRUE(absl::StrContains(help.out, d.own_flag + " (")) << d.binary << " --help:\n" << help.out;
    EXPECT_FALSE(absl::StrContains(help.out, d.other_flag + " (")) << d.binary << " --help:\n" << help.out;
    EXPECT_FALSE(absl::StrContains(help.out, "No flags matched")) << d.binary;
  }
}

TEST(DaemonFlags, VersionNamesVersionCommitAndCudaAndExitsZero) {
  for (const Daemon& d : Daemons()) {
    const CommandResult version = RunBinary({d.binary, "--version"});
    EXPECT_EQ(version.exit_code, 0) << d.binary << ": " << version.err;
    EXPECT_TRUE(std::regex_match(version.out, VersionLine(d.binary))) << d.binary << " --version: " << version.out;
  }
}

TEST(DaemonFlags, AnUnknownFlagIsStillRefused) {
  const CommandResult bad = RunBinary({"gradsync-metrics", "--no_such_flag=1"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(bad.err, "no_such_flag")) << bad.err;
}

TEST(CliVersion, PrintsTheSameLineAsTheDaemonsAndJson) {
  for (const char* spelling : {"version", "--version"}) {
    const CommandResult text = RunBinary({"gradsync", spelling});
    EXPECT_EQ(text.exit_code, 0) << text.err;
    EXPECT_TRUE(std::regex_match(text.out, VersionLine("gradsync"))) << spelling << ": " << text.out;
  }
  const CommandResult json = RunBinary({"gradsync", "version", "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &parsed).ok()) << json.out;
  const auto& f = parsed.fields();
  EXPECT_EQ(f.at("version").string_value(), GRADSYNC_PROJECT_VERSION);
  EXPECT_TRUE(std::regex_match(f.at("commit").string_value(), std::regex("[0-9a-f]{7,40}|unknown"))) << json.out;
  EXPECT_TRUE(std::regex_match(f.at("cuda").string_value(), std::regex(R"(\d+\.\d+|none)"))) << json.out;
  const CommandResult daemon = RunBinary({"gradsync-worker", "--version"});
  EXPECT_TRUE(absl::StrContains(daemon.out, "(commit " + f.at("commit").string_value() + ", "))
      << "the CLI and the daemons of one build report one commit: " << daemon.out << " vs " << json.out;
  EXPECT_EQ(RunBinary({"gradsync", "version", "-o", "wide"}).exit_code, 2);
  EXPECT_EQ(RunBinary({"gradsync", "version", "extra"}).exit_code, 2);
}

// Runs gradsync-metrics on free ports with GRADSYNC_LOG_FORMAT=`format` until it has announced
// its ports, stops it (SIGTERM) and returns what it logged.
std::string MetricsServiceLog(const std::string& format) {
  const std::string dir = MakeTempDir();
  const std::string log = dir + "/metrics.log";
  Children children;
  const pid_t pid = StartBinaryAt(
      "/usr/bin/env",
      {"GRADSYNC_LOG_FORMAT=" + format, std::string(GRADSYNC_BIN_DIR) + "/gradsync-metrics", "--listen=127.0.0.1:0",
       "--http_listen=127.0.0.1:0", "--api_listen=127.0.0.1:0", "--endpoints_file=" + dir + "/endpoints.json"},
      log);
  EXPECT_FALSE(WaitForEndpoints(dir + "/endpoints.json").empty()) << ReadFile(log);
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << ": " << ReadFile(log);
  return ReadFile(log);
}

const std::regex& TextLine() {
  static const std::regex line(R"([DIWE] \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[metrics\] [a-z_]+\.cc:\d+\] .+)");
  return line;
}

TEST(DaemonLogs, TextLinesCarryTheUtcDateAndTime) {
  const std::vector<std::string> lines = Lines(MetricsServiceLog("text"));
  ASSERT_GE(lines.size(), 2u);
  for (const std::string& line : lines) EXPECT_TRUE(std::regex_match(line, TextLine())) << line;
}

TEST(DaemonLogs, JsonFormatGivesOneObjectPerLine) {
  const std::vector<std::string> lines = Lines(MetricsServiceLog("json"));
  ASSERT_GE(lines.size(), 2u);
  for (const std::string& line : lines) {
    google::protobuf::Struct parsed;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &parsed).ok()) << line;
    const auto& f = parsed.fields();
    for (const char* field : {"time", "level", "component", "source", "message"}) {
      EXPECT_EQ(f.count(field), 1u) << field << " missing in " << line;
    }
    EXPECT_EQ(f.at("component").string_value(), "metrics");
    EXPECT_TRUE(std::regex_match(f.at("source").string_value(), std::regex(R"([a-z_]+\.cc:\d+)"))) << line;
    absl::Time time;
    EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, f.at("time").string_value(), &time, nullptr)) << line;
  }
}

TEST(DaemonLogs, AnUnknownFormatFallsBackToTextWithOneWarning) {
  const std::vector<std::string> lines = Lines(MetricsServiceLog("yaml"));
  ASSERT_GE(lines.size(), 3u) << "the warning and at least two lines of the service";
  int warnings = 0;
  for (const std::string& line : lines) {
    EXPECT_TRUE(std::regex_match(line, TextLine())) << line;
    if (absl::StrContains(line, "GRADSYNC_LOG_FORMAT")) {
      ++warnings;
      EXPECT_TRUE(absl::StartsWith(line, "W ")) << line;
      EXPECT_TRUE(absl::StrContains(line, "\"yaml\"")) << line;
    }
  }
  EXPECT_EQ(warnings, 1);
}

// A worker's JSON lines carry the job and rank of the generation it runs, and only then.
TEST(DaemonLogs, AWorkersJsonLinesCarryJobAndRankWhileItTrains) {
  const std::string dir = MakeTempDir();
  ASSERT_EQ(::setenv("GRADSYNC_LOG_FORMAT", "json", 1), 0);  // inherited by the local cluster
  const CommandResult run =
      RunBinary({"gradsync", "run", ExamplePath("mlp.yaml"), "-o", "json", "--state-dir", dir, "--workers", "1",
                 "--set", "training.worldSize=1", "--set", "training.maxSteps=3"});
  ::unsetenv("GRADSYNC_LOG_FORMAT");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const std::string job = ParseFlatJson(run.out)["id"];
  ASSERT_FALSE(job.empty()) << run.out;
  const std::vector<std::string> lines = Lines(ReadFile(dir + "/logs/worker-0.log"));
  ASSERT_FALSE(lines.empty());
  int assigned = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    google::protobuf::Struct parsed;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(lines[i], &parsed).ok()) << lines[i];
    const auto& f = parsed.fields();
    if (i == 0) {
      EXPECT_EQ(f.count("job"), 0u) << "no job before the first assignment: " << lines[i];
    }
    if (!absl::StrContains(f.at("message").string_value(), "assigned rank")) continue;
    ++assigned;
    ASSERT_EQ(f.count("job"), 1u) << lines[i];
    EXPECT_EQ(f.at("job").string_value(), job);
    EXPECT_EQ(f.at("rank").number_value(), 0);
  }
  EXPECT_EQ(assigned, 1);
}

// The build and process series on one /metrics, with values a running process can have.
void ExpectProcessSeries(const std::string& who, const std::string& address, const std::string& build_info) {
  SCOPED_TRACE(who + " /metrics at " + address);
  auto scrape = metrics::testing::HttpGet(address, "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  ASSERT_EQ(scrape->status, 200) << scrape->body;
  const std::string& text = scrape->body;
  using metrics::testing::SampleValue;
  EXPECT_EQ(SampleValue(text, build_info), 1) << text;
  EXPECT_GE(SampleValue(text, "process_cpu_seconds_total").value_or(-1), 0) << text;
  EXPECT_GT(SampleValue(text, "process_resident_memory_bytes").value_or(0), 1 << 20) << text;
  EXPECT_GT(SampleValue(text, "process_open_fds").value_or(0), 0) << text;
  const double now = absl::ToUnixSeconds(absl::Now());
  const double start = SampleValue(text, "process_start_time_seconds").value_or(0);
  EXPECT_LE(start, now + 1) << text;
  EXPECT_GT(start, now - 24 * 3600) << text;
  const absl::Status lint = metrics::testing::PromtoolCheck(text);
  if (!absl::IsFailedPrecondition(lint)) {
    EXPECT_TRUE(lint.ok()) << lint;
  }
}

TEST(ServiceMetrics, EveryServiceServesBuildInfoAndProcessSeries) {
  google::protobuf::Struct version;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(RunBinary({"gradsync", "version", "-o", "json"}).out, &version).ok());
  const auto& v = version.fields();
  const std::string build_info =
      absl::StrCat("gradsync_build_info{commit=\"", v.at("commit").string_value(), "\",cuda=\"",
                   v.at("cuda").string_value(), "\",version=\"", v.at("version").string_value(), "\"}");
  const std::string dir = MakeTempDir();
  const std::string coordinator = absl::StrCat("127.0.0.1:", FreePort());
  Children children;
  children.Start(CoordinatorArgs(coordinator, dir, {"--endpoints_file=" + dir + "/coordinator.json"}),
                 dir + "/coordinator.log");
  children.Start({"gradsync-metrics", "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0", "--api_listen=127.0.0.1:0",
                  "--endpoints_file=" + dir + "/metrics.json"},
                 dir + "/metrics.log");
  children.Start(WorkerArgs(coordinator, {"--endpoints_file=" + dir + "/worker.json"}), dir + "/worker.log");
  const std::map<std::string, std::string> coordinator_ep = WaitForEndpoints(dir + "/coordinator.json");
  const std::map<std::string, std::string> metrics_ep = WaitForEndpoints(dir + "/metrics.json");
  const std::map<std::string, std::string> worker_ep = WaitForEndpoints(dir + "/worker.json");
  ASSERT_TRUE(coordinator_ep.count("metrics")) << ReadFile(dir + "/coordinator.log");
  ASSERT_TRUE(metrics_ep.count("http")) << ReadFile(dir + "/metrics.log");
  ASSERT_TRUE(worker_ep.count("metrics")) << ReadFile(dir + "/worker.log");
  ExpectProcessSeries("gradsync-coordinator", coordinator_ep.at("metrics"), build_info);
  ExpectProcessSeries("gradsync-metrics", metrics_ep.at("http"), build_info);
  ExpectProcessSeries("gradsync-worker", worker_ep.at("metrics"), build_info);
}

}  // namespace
}  // namespace gradsync::testing

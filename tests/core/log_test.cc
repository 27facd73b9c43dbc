// GS_LOG lines as written to stderr: the RFC 3339 UTC time of text lines, and JSON lines read
// back with a real JSON parser (protobuf's), with job and rank after SetLogContext.
#include "gradsync/core/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

// Runs `log` with stderr sent to a file and returns the lines written; restores the logger's
// shared settings after.
std::vector<std::string> CaptureLines(const std::function<void()>& log) {
  const std::string path = ::testing::TempDir() + "/log_test_" + std::to_string(::getpid());
  const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(file, STDERR_FILENO);
  log();
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(file);
  SetLogFormat(LogFormat::kText);
  SetLogComponent("");
  ClearLogContext();
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

google::protobuf::Struct ParseJson(const std::string& line) {
  google::protobuf::Struct parsed;
  const auto status = google::protobuf::util::JsonStringToMessage(line, &parsed);
  EXPECT_TRUE(status.ok()) << status << " in " << line;
  return parsed;
}

// The time a line carries lies within a minute of now (the clock of this machine, in UTC).
void ExpectRecentRfc3339(const std::string& time) {
  absl::Time parsed;
  std::string error;
  ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, time, &parsed, &error)) << time << ": " << error;
  EXPECT_LT(absl::AbsDuration(absl::Now() - parsed), absl::Minutes(1)) << time;
}

TEST(Log, TextLinesStartWithLevelAndUtcRfc3339Time) {
  const std::vector<std::string> lines = CaptureLines([] {
    SetLogComponent("tester");
    GS_LOG(WARNING) << "disk " << 93 << "% full";
  });
  ASSERT_EQ(lines.size(), 1u);
  const std::regex text(R"(W (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) \[tester\] log_test\.cc:\d+\] disk 93% full)");
  std::smatch match;
  ASSERT_TRUE(std::regex_match(lines[0], match, text)) << lines[0];
  ExpectRecentRfc3339(match[1]);
}

TEST(Log, JsonLinesCarryEveryFieldEscaped) {
  const std::string message = "said \"no\" \\ then\nleft\t\x01 bad \xff\xfe end";
  const std::vector<std::string> lines = CaptureLines([&] {
    SetLogFormat(LogFormat::kJson);
    SetLogComponent("worker r3");
    GS_LOG(ERROR) << message;
  });
  ASSERT_EQ(lines.size(), 1u) << "a newline in a message must not split the line";
  const google::protobuf::Struct line = ParseJson(lines[0]);
  const auto& f = line.fields();
  EXPECT_EQ(f.at("level").string_value(), "error");
  EXPECT_EQ(f.at("component").string_value(), "worker r3");
  EXPECT_TRUE(std::regex_match(f.at("source").string_value(), std::regex(R"(log_test\.cc:\d+)")))
      << f.at("source").string_value();
  EXPECT_EQ(f.at("message").string_value(), "said \"no\" \\ then\nleft\t\x01 bad \xef\xbf\xbd\xef\xbf\xbd end");
  ExpectRecentRfc3339(f.at("time").string_value());
  EXPECT_EQ(f.count("job"), 0u) << "no job before SetLogContext";
  EXPECT_EQ(f.count("rank"), 0u);
}

TEST(Log, JsonLinesCarryJobAndRankWhileAContextIsSet) {
  const std::vector<std::string> lines = CaptureLines([] {
    SetLogFormat(LogFormat::kJson);
    SetLogContext("job-\"7\"", 5);
    GS_LOG(INFO) << "in the job";
    ClearLogContext();
    GS_LOG(INFO) << "after it";
  });
  ASSERT_EQ(lines.size(), 2u);
  const google::protobuf::Struct during = ParseJson(lines[0]);
  EXPECT_EQ(during.fields().at("job").string_value(), "job-\"7\"");
  EXPECT_EQ(during.fields().at("rank").number_value(), 5);
  EXPECT_EQ(during.fields().at("level").string_value(), "info");
  EXPECT_EQ(during.fields().count("component"), 0u) << "no component was set";
  const google::protobuf::Struct after = ParseJson(lines[1]);
  EXPECT_EQ(after.fields().count("job"), 0u) << lines[1];
  EXPECT_EQ(after.fields().count("rank"), 0u) << lines[1];
}

TEST(Log, MessagesBelowTheMinimumLevelAreDropped) {
  const std::vector<std::string> lines = CaptureLines([] {
    SetMinLogLevel(LogLevel::kWarning);
    GS_LOG(INFO) << "dropped";
    GS_LOG(WARNING) << "kept";
    SetMinLogLevel(LogLevel::kInfo);
  });
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("kept"), std::string::npos) << lines[0];
}

// What a tap sees: every message logged while a job's context is set, with its level, source,
// job and rank; nothing outside a job; and not what the tap itself logs.
TEST(LogTap, SeesTheJobsMessagesOnlyAndNotItsOwn) {
  struct Seen {
    std::string level, source, message, job;
    int rank;
  };
  std::vector<Seen> seen;
  CaptureLines([&] {
    SetLogTap([&](const LogRecord& r) {
      seen.push_back(
          {LogLevelName(r.level), std::string(r.source), std::string(r.message), std::string(r.job), r.rank});
      EXPECT_LT(absl::AbsDuration(absl::Now() - r.time), absl::Minutes(1));
      GS_LOG(INFO) << "from inside the tap";
    });
    GS_LOG(INFO) << "before any job";
    SetLogContext("job-7", 3);
    GS_LOG(WARNING) << "step " << 12;
    ClearLogContext();
    GS_LOG(INFO) << "after the job";
    SetLogTap(nullptr);
    SetLogContext("job-7", 3);
    GS_LOG(INFO) << "no tap";
  });
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].level, "warning");
  EXPECT_EQ(seen[0].message, "step 12");
  EXPECT_EQ(seen[0].job, "job-7");
  EXPECT_EQ(seen[0].rank, 3);
  EXPECT_TRUE(seen[0].source.rfind("log_test.cc:", 0) == 0) << seen[0].source;
}

}  // namespace
}  // namespace gradsync

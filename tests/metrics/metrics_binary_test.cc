// The gradsync-metrics binary: flags with port 0, the endpoints file, health, /metrics, and a
// clean exit on SIGTERM.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/rpc/health.h"
#include "gtest/gtest.h"
#include "http_get.h"

namespace gradsync::metrics {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(MetricsBinaryTest, ServesOnFreePortsAndExitsCleanlyOnSigterm) {
  const std::string endpoints = absl::StrCat(::testing::TempDir(), "/metrics-endpoints-", getpid(), ".json");
  std::remove(endpoints.c_str());
  const std::string binary = absl::StrCat(GRADSYNC_BIN_DIR, "/gradsync-metrics");
  const std::string endpoints_flag = "--endpoints_file=" + endpoints;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(binary.c_str(), binary.c_str(), "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
          "--api_listen=127.0.0.1:0", endpoints_flag.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }

  google::protobuf::Struct ep;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline && ReadFile(endpoints).empty()) absl::SleepFor(absl::Milliseconds(20));
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(ReadFile(endpoints), &ep).ok())
      << "no endpoints file from " << binary;
  const std::string grpc = ep.fields().at("grpc").string_value();
  const std::string http = ep.fields().at("http").string_value();
  const std::string api = ep.fields().at("api").string_value();
  EXPECT_TRUE(rpc::CheckHealth(grpc, "", absl::Seconds(5)).ok());
  auto scrape = testing::HttpGet(http, "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(scrape->status, 200);
  auto jobs = testing::HttpGet(api, "/v1/jobs");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ(jobs->status, 200);

  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  pid_t done = 0;
  const absl::Time exit_deadline = absl::Now() + absl::Seconds(20);
  while ((done = waitpid(pid, &status, WNOHANG)) == 0 && absl::Now() < exit_deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  if (done == 0) kill(pid, SIGKILL);
  ASSERT_EQ(done, pid) << "gradsync-metrics did not exit after SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  std::remove(endpoints.c_str());
}

}  // namespace
}  // namespace gradsync::metrics

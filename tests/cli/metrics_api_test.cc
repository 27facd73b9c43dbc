// MetricsApiFromArgs: whether the metrics service's address was named (an option, a local
// cluster, the environment) or is the caller's fallback, which `gradsync report` treats as "no
// service of this job's" when it refuses the caller (series_lookup.cc).
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gradsync/core/args.h"
#include "command_table.h"
#include "connection.h"
#include "gtest/gtest.h"

namespace gradsync::cli {
namespace {

class MetricsApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // No current cluster, state directory or address from this machine's environment.
    config_ = ::testing::TempDir() + "/metrics-api-test-config";
    std::filesystem::create_directories(config_);
    ::setenv("GRADSYNC_CONFIG_DIR", config_.c_str(), 1);
    for (const char* name :
         {"GRADSYNC_STATE_DIR", "GRADSYNC_METRICS_API", "GRADSYNC_ADDRESS", "GRADSYNC_METRICS_TOKEN_FILE"}) {
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    ::unsetenv("GRADSYNC_CONFIG_DIR");
    ::unsetenv("GRADSYNC_METRICS_API");
  }

  static MetricsApi From(const std::vector<std::string>& argv) {
    absl::StatusOr<Args> args = ParseCommandArgs("report", argv);
    EXPECT_TRUE(args.ok()) << args.status();
    absl::StatusOr<MetricsApi> api = MetricsApiFromArgs(*args, "localhost:9466");
    EXPECT_TRUE(api.ok()) << api.status();
    return api.ok() ? *api : MetricsApi{};
  }

  std::string config_;
};

TEST_F(MetricsApiTest, TheFallbackIsNotNamedButAnOptionOrTheEnvironmentIs) {
  MetricsApi api = From({"jobs/x"});
  EXPECT_EQ(api.address, "localhost:9466");
  EXPECT_FALSE(api.named);

  api = From({"jobs/x", "--metrics-api", "10.0.0.7:9466"});
  EXPECT_EQ(api.address, "10.0.0.7:9466");
  EXPECT_TRUE(api.named) << "the default port, named on purpose, is still named";

  ::setenv("GRADSYNC_METRICS_API", "metrics.example:9466", 1);
  api = From({"jobs/x"});
  EXPECT_EQ(api.address, "metrics.example:9466");
  EXPECT_TRUE(api.named);
}

TEST_F(MetricsApiTest, WithoutAFallbackNothingIsNamedAndTheAddressIsEmpty) {
  absl::StatusOr<Args> args = ParseCommandArgs("list", {});
  ASSERT_TRUE(args.ok()) << args.status();
  absl::StatusOr<MetricsApi> api = MetricsApiFromArgs(*args);
  ASSERT_TRUE(api.ok()) << api.status();
  EXPECT_EQ(api->address, "");
  EXPECT_FALSE(api->named);
}

}  // namespace
}  // namespace gradsync::cli

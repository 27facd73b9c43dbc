// Which listening addresses count as loopback, and what a service is told when a listener beyond
// loopback lacks its tokens.
#include "gradsync/core/listen_guard.h"

#include "gtest/gtest.h"

namespace gradsync {
namespace {

TEST(ListenGuard, LoopbackIsTheWholeOf127And1AndLocalhost) {
  for (const char* address : {"127.0.0.1:7070", "127.0.0.1:0", "127.1.2.3:80", "127.255.255.254:1", "[::1]:7070",
                              "::1:7070", "localhost:9464", "LOCALHOST:1", "127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackListen(address)) << address;
  }
  for (const char* address : {"0.0.0.0:7070", ":7070", "[::]:7070", "10.0.0.5:7070", "128.0.0.1:7070", "192.168.1.2:0",
                              "[::ffff:127.0.0.1]:1", "example.com:7070", "localhost.example.com:1", "coordinator:7070",
                              "unix:/tmp/socket", "", "1270.0.0.1:1"}) {
    EXPECT_FALSE(IsLoopbackListen(address)) << address;
  }
}

TEST(ListenGuard, AListenerBeyondLoopbackNeedsEveryTokenItNamesAndSaysWhich) {
  const std::vector<GuardedListen> listeners = {
      {"--listen", "0.0.0.0:7070", {{"--cluster_token_file", false}, {"--auth_token_file", true}}},
      {"--rest_listen", "127.0.0.1:8080", {{"--auth_token_file", false}}},
      {"--metrics_listen", "", {{"--metrics_token_file", false}}},
      {"--api_listen", "10.1.2.3:9466", {{"--metrics_token_file", false}}}};
  const absl::Status refused = CheckListenersGuarded(listeners, /*insecure=*/false);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(refused.message());
  EXPECT_NE(message.find("--listen=0.0.0.0:7070 needs --cluster_token_file;"), std::string::npos) << message;
  EXPECT_NE(message.find("--api_listen=10.1.2.3:9466 needs --metrics_token_file"), std::string::npos) << message;
  EXPECT_NE(message.find("--insecure"), std::string::npos) << message;
  // On loopback, off, or with its tokens, a listener is fine.
  EXPECT_EQ(message.find("--rest_listen"), std::string::npos) << message;
  EXPECT_EQ(message.find("--metrics_listen"), std::string::npos) << message;
  EXPECT_EQ(message.find("--auth_token_file"), std::string::npos) << message;

  EXPECT_TRUE(CheckListenersGuarded(listeners, /*insecure=*/true).ok());
  EXPECT_TRUE(CheckListenersGuarded({{"--listen", "0.0.0.0:1", {{"--cluster_token_file", true}}}}, false).ok());
}

}  // namespace
}  // namespace gradsync

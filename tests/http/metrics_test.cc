// /metrics through libs/http: prometheus-cpp's text exposition for GET and HEAD, collectables
// held weakly.
#include "gradsync/http/metrics.h"

#include <memory>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "http_client.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace gradsync::http {
namespace {

using gradsync::testing::HttpRequest;

TEST(MetricsServer, ServesTheExpositionForGetAndHead) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("gradsync_test_total")
      .Help("a test counter")
      .Register(*registry)
      .Add({})
      .Increment(3);
  auto server = StartMetricsServer("127.0.0.1:0", {registry});
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();

  auto get = HttpRequest("GET", port, "/metrics");
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(get.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_TRUE(absl::StrContains(get.body, "# TYPE gradsync_test_total counter\ngradsync_test_total 3")) << get.body;
  auto head = HttpRequest("HEAD", port, "/metrics");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  EXPECT_EQ(head.headers["content-length"], std::to_string(get.body.size()));

  EXPECT_EQ(HttpRequest("GET", port, "/other").status, 404);
  auto post = HttpRequest("POST", port, "/metrics");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.headers["allow"], "GET, HEAD");
}

TEST(MetricsServer, ACollectableThatIsGoneIsSkipped) {
  auto kept = std::make_shared<prometheus::Registry>();
  auto gone = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter().Name("kept_total").Help("kept").Register(*kept).Add({});
  prometheus::BuildCounter().Name("gone_total").Help("gone").Register(*gone).Add({});
  const Handler handler = MetricsHandler({kept, gone});
  Request scrape{"GET", "/metrics", {}, {}, ""};
  EXPECT_TRUE(absl::StrContains(handler(scrape).body, "gone_total"));
  gone.reset();
  const Reply after = handler(scrape);
  EXPECT_EQ(after.status, 200);
  EXPECT_TRUE(absl::StrContains(after.body, "kept_total")) << after.body;
  EXPECT_FALSE(absl::StrContains(after.body, "gone_total")) << after.body;
}

}  // namespace
}  // namespace gradsync::http

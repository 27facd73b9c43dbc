// The REST API over real HTTP against a real server (libs/http) and coordinator.
#include "rest_gateway.h"

#include "gtest/gtest.h"
#include "http_client.h"

namespace gradsync::coordinator {
namespace {

using gradsync::testing::HttpRequest;

constexpr char kToken[] = "s3cret-token";

class RestGatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RestOptions options;
    options.listen = "127.0.0.1:0";
    options.max_body_bytes = 4096;
    options.auth = TokenAuth(kToken);
    auto g = RestGateway::Start(&c_, options);
    ASSERT_TRUE(g.ok()) << g.status();
    gateway_ = *std::move(g);
  }

  gradsync::testing::HttpResponse Call(const std::string& method, const std::string& path, const std::string& body = "",
                                       const std::string& token = kToken) {
    std::map<std::string, std::string> headers;
    if (!token.empty()) headers["Authorization"] = "Bearer " + token;
    return HttpRequest(method, gateway_->port(), path, headers, body);
  }

  Coordinator c_{{}, std::make_unique<InMemoryJobStore>()};
  std::unique_ptr<RestGateway> gateway_;
};

// Empty lists are printed as [] (proto3's JSON would leave them out), so that a client can
// iterate over them without a special case.
TEST_F(RestGatewayTest, EmptyListsAreEmptyArrays) {
  auto none = Call("GET", "/v1/jobs");
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_NE(none.body.find("\"jobs\": []"), std::string::npos) << none.body;
  ASSERT_EQ(Call("POST", "/v1/jobs", R"({"name": "rest", "training": {"worldSize": 2, "maxSteps": 5}})").status, 200);
  const std::string id = c_.ListJobs(0, "")->jobs(0).id();
  auto one = Call("GET", "/v1/jobs");
  EXPECT_EQ(one.body.find("\"jobs\": []"), std::string::npos) << one.body;
  EXPECT_NE(one.body.find(id), std::string::npos) << one.body;
  auto checkpoints = Call("GET", "/v1/jobs/" + id + "/checkpoints");
  ASSERT_EQ(checkpoints.status, 200) << checkpoints.body;
  EXPECT_NE(checkpoints.body.find("\"checkpoints\": []"), std::string::npos) << checkpoints.body;
}

TEST_F(RestGatewayTest, CreateGetListCancelAndEvents) {
  auto created = Call("POST", "/v1/jobs", R"({"name": "rest", "training": {"worldSize": 2, "maxSteps": 5}})");
  ASSERT_EQ(created.status, 200) << created.body;
  EXPECT_EQ(created.headers["content-type"], "application/json");
  EXPECT_NE(created.body.find("\"state\": \"PENDING\""), std::string::npos) << created.body;
  const std::string id = c_.ListJobs(0, "")->jobs(0).id();

  auto got = Call("GET", "/v1/jobs/" + id);
  EXPECT_EQ(got.status, 200);
  EXPECT_NE(got.body.find("\"worldSize\": 2"), std::string::npos) << got.body;
  auto list = Call("GET", "/v1/jobs?pageSize=10");
  EXPECT_EQ(list.status, 200);
  EXPECT_NE(list.body.find(id), std::string::npos);
  auto cancelled = Call("POST", "/v1/jobs/" + id + ":cancel");
  EXPECT_EQ(cancelled.status, 200);
  EXPECT_NE(cancelled.body.find("CANCELLED"), std::string::npos);
  auto again = Call("POST", "/v1/jobs/" + id + ":cancel");
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_NE(again.body.find(R"("code": 9, "status": "FAILED_PRECONDITION")"), std::string::npos) << again.body;
  auto events = Call("GET", "/v1/jobs/" + id + "/events");
  EXPECT_EQ(events.status, 200);
  EXPECT_NE(events.body.find("\"Cancelled\""), std::string::npos) << events.body;
}

TEST_F(RestGatewayTest, BadRequestsGetTheRightStatusAndNameTheProblem) {
  struct Case {
    std::string body;
    int status;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {R"({"training": {"worldSize": 2)", 400, "request body"},              // malformed JSON
      {R"({"training": {"worldSize": "two"}})", 400, "training.worldSize"},  // wrong type
      {R"({"training": {"wordSize": 2}})", 400, "training.wordSize"},        // unknown field
      {R"({"training": {"microBatch": -1, "worldSize": 1}})", 400, "training.microBatch"},
      {std::string(8000, ' ') + "{}", 413, "exceeds the limit"},  // huge body
  };
  for (const Case& c : cases) {
    auto r = Call("POST", "/v1/jobs", c.body);
    EXPECT_EQ(r.status, c.status) << c.body.substr(0, 60) << " -> " << r.body;
    EXPECT_NE(r.body.find(c.needle), std::string::npos) << r.body;
    EXPECT_NE(r.body.find(R"("details": [])"), std::string::npos) << r.body;
  }
  EXPECT_EQ(c_.ListJobs(0, "")->jobs_size(), 0) << "a refused request must create nothing";
  auto unknown = Call("GET", "/v1/jobs/nope");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_NE(unknown.body.find(R"("code": 5, "status": "NOT_FOUND")"), std::string::npos);
  EXPECT_EQ(Call("DELETE", "/v1/jobs").status, 405);
  EXPECT_EQ(Call("GET", "/v1/jobs?pageSize=many").status, 400);
}

TEST_F(RestGatewayTest, TheTokenIsRequiredAndChecked) {
  auto missing = Call("GET", "/v1/jobs", "", "");
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(missing.headers["www-authenticate"], "Bearer realm=\"gradsync\"");
  auto wrong = Call("GET", "/v1/jobs", "", "guess");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(wrong.body.find(kToken), std::string::npos) << "the token must never be echoed";
  auto scheme = HttpRequest("GET", gateway_->port(), "/v1/jobs", {{"Authorization", std::string("Basic ") + kToken}});
  EXPECT_EQ(scheme.status, 401);
  EXPECT_EQ(Call("GET", "/healthz", "", "").status, 200) << "health needs no token";
}

// GET /v1/workers: the pool, behind the token like the jobs.
TEST_F(RestGatewayTest, WorkersAreListedWithTheToken) {
  auto none = Call("GET", "/v1/workers");
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_NE(none.body.find("\"workers\": []"), std::string::npos) << none.body;
  v1::RegisterWorkerRequest req;
  req.set_hostname("node-7");
  req.mutable_device()->set_kind(v1::Device::CPU);
  const std::string id = c_.RegisterWorker(req).worker_id();
  auto one = Call("GET", "/v1/workers");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_NE(one.body.find("\"name\": \"workers/" + id + "\""), std::string::npos) << one.body;
  EXPECT_NE(one.body.find("\"hostname\": \"node-7\""), std::string::npos) << one.body;
  EXPECT_NE(one.body.find("\"state\": \"WORKER_IDLE\""), std::string::npos) << one.body;
  EXPECT_EQ(Call("GET", "/v1/workers", "", "").status, 401);
  EXPECT_EQ(Call("POST", "/v1/workers").status, 405);
  EXPECT_EQ(Call("GET", "/v1/workers/" + id).status, 404);
}

TEST(TokenAuth, ConstantTimeComparisonIsStillAComparison) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  TokenAuth none;
  EXPECT_TRUE(none.Check("").ok());
  TokenAuth auth("t0k");
  EXPECT_TRUE(auth.Check("Bearer t0k").ok());
  EXPECT_TRUE(auth.Check("bearer  t0k ").ok());
  EXPECT_EQ(auth.Check("Bearer t0K").code(), absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace gradsync::coordinator

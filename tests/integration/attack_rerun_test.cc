// The attacks that once broke gradsync, rerun against a cluster started as the README starts one
// (`gradsync local up`): every one must be refused with a clear answer, and afterwards every
// process is alive and the cluster still trains a job to the end. The attacker can reach every
// port; some attacks are made by an insider who holds the cluster token.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gradsync/cluster/local_cluster_file.h"
#include "gradsync/core/secret_file.h"
#include "gradsync/rpc/server.h"
#include "gradsync/v1/coordinator.grpc.pb.h"
#include "gradsync/v1/job.grpc.pb.h"
#include "gradsync/v1/metrics.grpc.pb.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

int PortOf(const std::string& address) {
  int port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port)) << address;
  return port;
}

// A TCP connection to 127.0.0.1:port; -1 when refused.
int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{20, 0};  // no reply within 20 s counts as no reply
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

struct HttpReply {
  int status = 0;  // 0: no reply
  std::string body;
};

// One HTTP/1.1 request on a connection of its own, with the bearer token when non-empty.
HttpReply Http(int port, const std::string& method, const std::string& path, const std::string& token,
               const std::string& body = "") {
  HttpReply reply;
  const int fd = Connect(port);
  if (fd < 0) return reply;
  std::string request = absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
  if (!token.empty()) absl::StrAppend(&request, "Authorization: Bearer ", token, "\r\n");
  if (!body.empty()) absl::StrAppend(&request, "Content-Type: application/json\r\n");
  absl::StrAppend(&request, "Content-Length: ", body.size(), "\r\n\r\n", body);
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string received;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) received.append(buf, static_cast<size_t>(n));
  ::close(fd);
  std::vector<std::string> status_line = absl::StrSplit(received.substr(0, received.find("\r\n")), ' ');
  if (status_line.size() >= 2) (void)absl::SimpleAtoi(status_line[1], &reply.status);
  const size_t head_end = received.find("\r\n\r\n");
  if (head_end != std::string::npos) reply.body = received.substr(head_end + 4);
  return reply;
}

class AttackRerun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    std::filesystem::create_directories(dir_ + "/data");
    CommandResult up =
        RunBinary({"gradsync", "local", "up", "--workers", "1", "--state-dir", dir_, "--data-root", dir_ + "/data"});
    ASSERT_EQ(up.exit_code, 0) << up.err;
    auto cluster = cluster::ReadLocalClusterFile(dir_);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *cluster;
    for (const char* name : {"auth", "cluster", "metrics"}) {
      ASSERT_TRUE(cluster_.token_files.count(name)) << "local up made no " << name << " token";
      auto token = ReadTokenFile(cluster_.token_files.at(name), name);
      ASSERT_TRUE(token.ok()) << token.status();
      tokens_[name] = *token;
    }
  }
  void TearDown() override { RunBinary({"gradsync", "local", "down", "--state-dir", dir_}); }

  std::string Endpoint(const std::string& name) const {
    auto it = cluster_.endpoints.find(name);
    return it == cluster_.endpoints.end() ? "" : it->second;
  }
  std::shared_ptr<grpc::Channel> Channel(const std::string& endpoint, const std::string& token) const {
    rpc::ChannelOptions options;
    options.bearer_token = token;
    return rpc::MakeChannel(Endpoint(endpoint), options);
  }
  HttpReply Rest(const std::string& method, const std::string& path, const std::string& body = "") const {
    return Http(PortOf(Endpoint("rest")), method, path, tokens_.at("auth"), body);
  }
  // The job a REST submission created, waited for until it ends: its JSON ("" when none was made).
  std::string Ended(const HttpReply& created) const {
    const size_t at = created.body.find("\"jobs/");
    EXPECT_NE(at, std::string::npos) << created.body;
    if (at == std::string::npos) return "";
    const std::string job = created.body.substr(at + 1, created.body.find('"', at + 1) - at - 1);
    return WaitForJobWith({"--state-dir", dir_}, job, absl::Seconds(120), [](const std::string& out) {
      return absl::StrContains(out, "SUCCEEDED") || absl::StrContains(out, "FAILED");
    });
  }
  // Every process of the cluster is still running.
  void ExpectAllAlive() const {
    for (pid_t pid : cluster_.pids) EXPECT_TRUE(ProcessAlive(pid)) << "process " << pid << " died";
  }

  std::string dir_;
  cluster::LocalClusterFile cluster_;
  std::map<std::string, std::string> tokens_;
};

TEST_F(AttackRerun, EveryAttackIsRefusedAndTheClusterStillTrains) {
  // 1. Without tokens, the worker-facing and job services refuse everything.
  {
    v1::RegisterWorkerRequest req;
    v1::RegisterWorkerResponse resp;
    grpc::ClientContext ctx;
    EXPECT_EQ(
        v1::CoordinatorService::NewStub(Channel("coordinator", ""))->RegisterWorker(&ctx, req, &resp).error_code(),
        grpc::StatusCode::UNAUTHENTICATED);
    v1::ListJobsRequest list;
    v1::ListJobsResponse jobs;
    grpc::ClientContext list_ctx;
    EXPECT_EQ(v1::JobService::NewStub(Channel("coordinator", ""))->ListJobs(&list_ctx, list, &jobs).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(Http(PortOf(Endpoint("rest")), "GET", "/v1/jobs", "").status, 401);
    EXPECT_EQ(Http(PortOf(Endpoint("coordinatorMetrics")), "GET", "/metrics", "").status, 401);
  }

  // 2. An insider with the cluster token registers a worker of its own, but cannot report for a
  // rank it does not hold, nor with a session of its own making.
  {
    auto stub = v1::CoordinatorService::NewStub(Channel("coordinator", tokens_.at("cluster")));
    v1::RegisterWorkerRequest req;
    req.set_name("intruder");
    v1::RegisterWorkerResponse registered;
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub->RegisterWorker(&ctx, req, &registered).ok());
    v1::ReportResultRequest forged;
    forged.set_worker_id(registered.worker_id());
    forged.set_job_id("any");
    forged.set_param_digest("fnv1a64:forged");
    v1::ReportResultResponse resp;
    grpc::ClientContext report_ctx;
    EXPECT_EQ(stub->ReportResult(&report_ctx, forged, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << "a report without the session RegisterWorker issued";
  }

  // 3. One step report claiming 2^31-1 ranks once took 24 GB in the metrics service.
  {
    auto stub = v1::MetricsService::NewStub(Channel("metrics", tokens_.at("cluster")));
    grpc::ClientContext ctx;
    v1::ReportStepsResponse resp;
    auto writer = stub->ReportSteps(&ctx, &resp);
    v1::StepReport report;
    report.set_job_id("flood");
    report.set_world_size(2147483647);
    report.set_step(1);
    writer->Write(report);
    writer->WritesDone();
    (void)writer->Finish();
    EXPECT_EQ(resp.accepted(), 0) << "a report for 2^31-1 ranks was accepted";
    EXPECT_EQ(Http(PortOf(Endpoint("metricsApi")), "GET", "/v1/jobs", tokens_.at("metrics")).status, 200)
        << "the metrics service still answers";
  }

  // 4. Specs that once crashed the coordinator, killed workers, escaped the roots or broke the
  // job list: each refused with 400 naming the problem.
  const std::string nested = std::string(200, '[') + std::string(200, ']');
  EXPECT_EQ(Rest("POST", "/v1/jobs", nested).status, 400);
  const HttpReply bad_utf8 = Rest("POST", "/v1/jobs", "{\"name\": \"bad\xff\xfename\"}");
  EXPECT_EQ(bad_utf8.status, 400) << bad_utf8.body;
  const HttpReply etc = Rest("POST", "/v1/jobs", R"({"checkpoint": {"dir": "/etc/gradsync-attack"}})");
  EXPECT_EQ(etc.status, 400) << etc.body;
  const HttpReply climb = Rest("POST", "/v1/jobs", R"({"checkpoint": {"dir": "../../.."}})");
  EXPECT_EQ(climb.status, 400) << climb.body;
  const HttpReply shadow =
      Rest("POST", "/v1/jobs", R"({"model": {"preset": "gpt-tiny"}, "data": {"text": {"paths": ["/etc/passwd"]}}})");
  EXPECT_EQ(shadow.status, 400) << shadow.body;
  EXPECT_TRUE(absl::StrContains(shadow.body, "/etc/passwd")) << shadow.body;
  const HttpReply huge =
      Rest("POST", "/v1/jobs", R"({"model": {"preset": "mlp", "mlp": {"hiddenDims": [65536, 65536]}}})");
  EXPECT_EQ(huge.status, 400) << huge.body;
  for (const char* number : {"-1", "1e308"}) {
    const HttpReply r = Rest("POST", "/v1/jobs", absl::StrCat(R"({"checkpoint": {"everySeconds": )", number, "}}"));
    EXPECT_EQ(r.status, 400) << number << ": " << r.body;
  }
  EXPECT_EQ(Rest("GET", "/v1/jobs").status, 200) << "the job list still answers";

  // 5. Slow clients that never finish their request head do not starve the health probe.
  std::vector<int> slow;
  for (int i = 0; i < 24; ++i) {
    const int fd = Connect(PortOf(Endpoint("rest")));
    if (fd < 0) continue;
    const std::string partial = "GET /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    ::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  EXPECT_EQ(Http(PortOf(Endpoint("rest")), "GET", "/healthz", "").status, 200);
  for (int fd : slow) ::close(fd);

  // Nothing above broke the cluster: every process lives, and a job (whose name has an emoji,
  // sent as the JSON surrogate pair) trains to the end.
  ExpectAllAlive();
  const HttpReply emoji =
      Rest("POST", "/v1/jobs",
           R"({"name": "rocket \ud83d\ude80", "model": {"preset": "mlp"},)"
           R"( "data": {"synthetic": {"numSamples": 512, "inputDim": 8, "numClasses": 4, "teacherHidden": 8}},)"
           R"( "training": {"worldSize": 1, "maxSteps": 10, "epochs": 0, "microBatch": 16}})");
  ASSERT_EQ(emoji.status, 200) << emoji.body;
  const std::string done = Ended(emoji);
  EXPECT_TRUE(absl::StrContains(done, "SUCCEEDED")) << done;
  EXPECT_TRUE(absl::StrContains(done, "\\ud83d\\ude80") || absl::StrContains(done, "\xF0\x9F\x9A\x80")) << done;
  ExpectAllAlive();
}

// Round 3 (SECURITY.md): the surfaces added since, attacked the same way on the same kind of
// cluster. Each attack must be refused, and the cluster must train a job afterwards.
TEST_F(AttackRerun, TheThirdRoundsAttacksAreRefusedAndTheClusterStillTrains) {
  // 1. A body without the token is refused at its head, before a byte of it is read, and bodies
  // trickled with the token hold no thread: an authorised request is answered beside 12 of them.
  {
    const int port = PortOf(Endpoint("rest"));
    const int unauthenticated = Connect(port);
    ASSERT_GE(unauthenticated, 0);
    const std::string head = "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n";
    ::send(unauthenticated, head.data(), head.size(), MSG_NOSIGNAL);
    char reply[256] = {};
    const absl::Time sent = absl::Now();
    const ssize_t got = ::recv(unauthenticated, reply, sizeof(reply) - 1, 0);
    ::close(unauthenticated);
    EXPECT_GT(got, 0);
    EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 401 ")) << reply;
    EXPECT_LT(absl::Now() - sent, absl::Seconds(5)) << "the server waited for the body";
    std::vector<int> tricklers;
    const std::string authorised_head = absl::StrCat("POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ",
                                                     tokens_.at("auth"), "\r\nContent-Length: 100000\r\n\r\n{");
    for (int i = 0; i < 12; ++i) {
      const int fd = Connect(port);
      if (fd < 0) continue;
      ::send(fd, authorised_head.data(), authorised_head.size(), MSG_NOSIGNAL);
      tricklers.push_back(fd);
    }
    const absl::Time asked = absl::Now();
    EXPECT_EQ(Rest("GET", "/v1/jobs").status, 200);
    EXPECT_LT(absl::Now() - asked, absl::Seconds(5)) << "the job list waited behind trickled bodies";
    for (int fd : tricklers) ::close(fd);
  }

  // 2. Step reports for 2 jobs of 4096 ranks once made every scrape of the metrics service about
  // 480K series (the bound counted label sets): now the series stay within --max_series.
  {
    auto stub = v1::MetricsService::NewStub(Channel("metrics", tokens_.at("cluster")));
    grpc::ClientContext ctx;
    v1::ReportStepsResponse resp;
    auto writer = stub->ReportSteps(&ctx, &resp);
    for (int job = 0; job < 2; ++job) {
      for (int rank = 0; rank < 4096; ++rank) {
        v1::StepReport report;
        report.set_job_id(absl::StrCat("series-flood-", job));
        report.set_generation(1);
        report.set_world_size(4096);
        report.set_rank(rank);
        report.set_step(1);
        report.set_loss(1.0);
        report.set_step_seconds(0.1);
        if (!writer->Write(report)) break;
      }
    }
    writer->WritesDone();
    (void)writer->Finish();
    EXPECT_GT(resp.accepted(), 0);
    EXPECT_LT(resp.accepted(), 2 * 4096) << "every report of 8192 ranks found room for its series";
    const HttpReply scrape = Http(PortOf(Endpoint("metricsHttp")), "GET", "/metrics", tokens_.at("metrics"));
    ASSERT_EQ(scrape.status, 200);
    size_t series = 0;
    for (absl::string_view line : absl::StrSplit(scrape.body, '\n')) series += !line.empty() && line[0] != '#';
    EXPECT_LE(series, 250000u + 200u) << "series past --max_series (and the service's own)";
  }

  // 3. A token in a file every user can read, in a directory every user can enter, is refused
  // before it is sent anywhere.
  {
    const std::string open_dir = MakeTempDir();
    ASSERT_EQ(::chmod(open_dir.c_str(), 0755), 0);
    const std::string file = open_dir + "/auth.token";
    std::ofstream(file) << tokens_.at("auth") << "\n";
    ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
    const CommandResult list = RunBinary({"gradsync", "list", "--address", Endpoint("coordinator"), "--token-file", file});
    EXPECT_NE(list.exit_code, 0);
    EXPECT_TRUE(absl::StrContains(list.err, "readable by every user")) << list.err;
  }

  // 4. A state directory another user could write into is not trusted with the cluster's tokens.
  {
    const std::string shared = MakeTempDir();
    ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);
    const CommandResult up = RunBinary({"gradsync", "local", "up", "--workers", "1", "--state-dir", shared});
    EXPECT_NE(up.exit_code, 0);
    EXPECT_TRUE(absl::StrContains(up.err, shared)) << up.err;
    EXPECT_FALSE(std::filesystem::exists(shared + "/endpoints.json")) << "a cluster started in it";
  }

  // 5. A fifo as model.initFrom once hung every rank: the job fails at once, naming the file, and
  // the worker lives on.
  const std::string fifo = dir_ + "/data/weights.bin";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const HttpReply fifo_job =
      Rest("POST", "/v1/jobs",
           absl::StrCat(R"({"name": "fifo", "model": {"preset": "mlp", "initFrom": ")", fifo, R"("},)",
                        R"( "data": {"synthetic": {"numSamples": 64, "inputDim": 8, "numClasses": 4, "teacherHidden": 8}},)",
                        R"( "training": {"worldSize": 1, "maxSteps": 2, "epochs": 0, "microBatch": 16, "maxRestarts": 0}})"));
  if (fifo_job.status == 200) {
    const std::string done = Ended(fifo_job);
    EXPECT_TRUE(absl::StrContains(done, "FAILED")) << done;
    EXPECT_TRUE(absl::StrContains(done, "not a regular file")) << done;
  } else {
    EXPECT_EQ(fifo_job.status, 400) << fifo_job.body;  // refused at submission is as good
  }

  ExpectAllAlive();
  const HttpReply after =
      Rest("POST", "/v1/jobs",
           R"({"name": "after", "model": {"preset": "mlp"},)"
           R"( "data": {"synthetic": {"numSamples": 512, "inputDim": 8, "numClasses": 4, "teacherHidden": 8}},)"
           R"( "training": {"worldSize": 1, "maxSteps": 10, "epochs": 0, "microBatch": 16}})");
  ASSERT_EQ(after.status, 200) << after.body;
  EXPECT_TRUE(absl::StrContains(Ended(after), "SUCCEEDED"));
  ExpectAllAlive();
}

}  // namespace
}  // namespace gradsync::testing

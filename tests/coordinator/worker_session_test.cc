// Worker sessions over the real gRPC service: every worker call after registration must carry the
// session of the worker it names, and a job's rendezvous store and epoch plans are open only to
// the workers running its ranks. The attacker here holds the cluster token (none is set), can
// register a worker of its own, and knows the victim worker's id and the job's id.
#include <memory>

#include "absl/strings/match.h"
#include "coordinator.h"
#include "gradsync/rpc/server.h"
#include "grpc_services.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

class WorkerSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = rpc::StartServer("127.0.0.1:0", {&service_});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    victim_ = Register("victim");
    v1::JobSpec spec;
    spec.mutable_training()->set_max_steps(100);
    auto job = c_.CreateJob(spec);
    ASSERT_TRUE(job.ok()) << job.status();
    job_id_ = job->id();
    attacker_ = Register("attacker");  // registered after the job took the victim: idle
  }
  void TearDown() override {
    c_.Shutdown();
    server_->Shutdown(absl::Seconds(1));
  }

  // A stub whose calls carry `session` (none when empty).
  std::unique_ptr<v1::CoordinatorService::Stub> StubWith(const std::string& session) {
    rpc::ChannelOptions options;
    if (!session.empty()) {
      auto header = std::make_shared<rpc::LateHeader>(rpc::kWorkerSessionMetadata);
      header->Set(session);
      options.late_header = header;
    }
    return v1::CoordinatorService::NewStub(rpc::MakeChannel(Address(), options));
  }
  std::string Address() const { return "127.0.0.1:" + std::to_string(server_->port()); }

  v1::RegisterWorkerResponse Register(const std::string& name) {
    v1::RegisterWorkerRequest req;
    req.set_name(name);
    req.set_hostname(name);
    v1::RegisterWorkerResponse resp;
    grpc::ClientContext ctx;
    EXPECT_TRUE(StubWith("")->RegisterWorker(&ctx, req, &resp).ok());
    return resp;
  }

  v1::ReportResultRequest ForgedSuccess() const {
    v1::ReportResultRequest r;
    r.set_worker_id(victim_.worker_id());
    r.set_job_id(job_id_);
    r.set_generation(1);
    r.set_rank(0);
    r.set_param_digest("fnv1a64:forged");
    return r;
  }
  grpc::Status Report(const std::string& session, const v1::ReportResultRequest& r) {
    v1::ReportResultResponse resp;
    grpc::ClientContext ctx;
    return StubWith(session)->ReportResult(&ctx, r, &resp);
  }
  grpc::Status KvSet(const std::string& session, const std::string& job, int generation) {
    v1::KvSetRequest req;
    req.mutable_ns()->set_job_id(job);
    req.mutable_ns()->set_generation(generation);
    req.set_key("rank-0-address");
    req.set_value("10.0.0.66:4444");
    v1::KvSetResponse resp;
    grpc::ClientContext ctx;
    return StubWith(session)->KvSet(&ctx, req, &resp);
  }
  v1::JobState State() { return c_.GetJob(job_id_)->state(); }

  Coordinator c_{{}, std::make_unique<InMemoryJobStore>()};
  CoordinatorServiceImpl service_{&c_, TokenAuth()};
  std::unique_ptr<rpc::RunningServer> server_;
  v1::RegisterWorkerResponse victim_, attacker_;
  std::string job_id_;
};

TEST_F(WorkerSessionTest, RegistrationIssuesADistinctUnguessableSession) {
  EXPECT_TRUE(absl::StartsWith(victim_.session_token(), victim_.worker_id() + ".")) << victim_.session_token();
  EXPECT_GE(victim_.session_token().size(), victim_.worker_id().size() + 1 + 64);
  EXPECT_NE(victim_.session_token(), attacker_.session_token());
}

TEST_F(WorkerSessionTest, AReportNamingAnotherWorkerIsRefusedAndTheJobRunsOn) {
  const grpc::Status bare = Report("", ForgedSuccess());
  EXPECT_EQ(bare.error_code(), grpc::StatusCode::UNAUTHENTICATED) << bare.error_message();
  const grpc::Status own_session = Report(attacker_.session_token(), ForgedSuccess());
  EXPECT_EQ(own_session.error_code(), grpc::StatusCode::UNAUTHENTICATED) << own_session.error_message();
  const grpc::Status guessed = Report(victim_.worker_id() + "." + std::string(64, '0'), ForgedSuccess());
  EXPECT_EQ(guessed.error_code(), grpc::StatusCode::UNAUTHENTICATED) << guessed.error_message();
  v1::ReportResultRequest failure = ForgedSuccess();
  failure.set_error("INTERNAL: made up");
  EXPECT_EQ(Report(attacker_.session_token(), failure).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(State(), v1::RUNNING);

  EXPECT_TRUE(Report(victim_.session_token(), ForgedSuccess()).ok()) << "the rank's own worker still reports";
  EXPECT_EQ(State(), v1::SUCCEEDED);
}

TEST_F(WorkerSessionTest, AForgedCheckpointReportIsRefusedBeforeAnyFileIsTouched) {
  v1::ReportCheckpointRequest r;
  r.set_worker_id(victim_.worker_id());
  r.set_job_id(job_id_);
  r.set_generation(1);
  r.set_rank(0);
  r.set_step(10);
  r.set_dir("/etc");
  v1::ReportCheckpointResponse resp;
  grpc::ClientContext ctx;
  const grpc::Status s = StubWith(attacker_.session_token())->ReportCheckpoint(&ctx, r, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
}

TEST_F(WorkerSessionTest, HeartbeatsAndTheAssignmentStreamNeedTheWorkersOwnSession) {
  v1::HeartbeatRequest beat;
  beat.set_worker_id(victim_.worker_id());
  v1::HeartbeatResponse resp;
  grpc::ClientContext ctx;
  const grpc::Status s = StubWith(attacker_.session_token())->Heartbeat(&ctx, beat, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();

  v1::WatchAssignmentsRequest watch;
  watch.set_worker_id(victim_.worker_id());
  grpc::ClientContext stream_ctx;
  v1::Assignment a;
  auto reader = StubWith(attacker_.session_token())->WatchAssignments(&stream_ctx, watch);
  EXPECT_FALSE(reader->Read(&a)) << "the attacker received the victim's assignment for job " << a.job_id();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);

  grpc::ClientContext own_ctx;
  auto own = StubWith(victim_.session_token())->WatchAssignments(&own_ctx, watch);
  ASSERT_TRUE(own->Read(&a));
  EXPECT_EQ(a.job_id(), job_id_);
}

TEST_F(WorkerSessionTest, AnUnknownWorkerIsToldToRegisterAgain) {
  v1::HeartbeatRequest beat;
  beat.set_worker_id("worker-gone");
  v1::HeartbeatResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(StubWith("worker-gone.abc")->Heartbeat(&ctx, beat, &resp).ok());
  EXPECT_EQ(resp.action(), v1::HeartbeatResponse::REREGISTER);
}

TEST_F(WorkerSessionTest, AJobsRendezvousAndEpochPlansAreClosedToWorkersOutsideIt) {
  const grpc::Status bare = KvSet("", job_id_, 1);
  EXPECT_EQ(bare.error_code(), grpc::StatusCode::UNAUTHENTICATED) << bare.error_message();
  const grpc::Status outsider = KvSet(attacker_.session_token(), job_id_, 1);
  EXPECT_EQ(outsider.error_code(), grpc::StatusCode::PERMISSION_DENIED) << outsider.error_message();
  EXPECT_TRUE(KvSet(victim_.session_token(), job_id_, 1).ok());
  EXPECT_EQ(KvSet(victim_.session_token(), job_id_, 2).error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << "a rank of generation 1 has no business in generation 2's rendezvous";

  v1::EpochPlanRequest plan_req;
  plan_req.set_job_id(job_id_);
  v1::EpochPlan plan;
  grpc::ClientContext ctx;
  const grpc::Status plan_s = StubWith(attacker_.session_token())->GetEpochPlan(&ctx, plan_req, &plan);
  EXPECT_EQ(plan_s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << plan_s.error_message();
  grpc::ClientContext own_ctx;
  EXPECT_TRUE(StubWith(victim_.session_token())->GetEpochPlan(&own_ctx, plan_req, &plan).ok());
}

TEST_F(WorkerSessionTest, AStandAloneRendezvousNeedsNoSession) { EXPECT_TRUE(KvSet("", "bench", 1).ok()); }

TEST_F(WorkerSessionTest, KeysPlantedBeforeAGenerationStartsNeverReachItsRanks) {
  // A namespace of no known job is open, so keys can be planted under the id a future job will
  // get. Stand in for that: plant into the namespace of a job that waits for a second worker.
  v1::JobSpec spec;
  spec.mutable_training()->set_world_size(2);
  spec.mutable_training()->set_max_steps(100);
  auto waiting = c_.CreateJob(spec);
  ASSERT_TRUE(waiting.ok());
  const std::string ns = KvNamespaceOf(waiting->id(), 1);
  c_.kv().Set(ns, "rank-0-address", "10.0.0.66:4444");
  ASSERT_EQ(c_.kv().NamespaceSizeForTest(ns), 1u);
  Register("second");  // with the attacker's idle worker, the job's gang is complete
  ASSERT_EQ(c_.GetJob(waiting->id())->state(), v1::RUNNING);
  EXPECT_EQ(c_.kv().NamespaceSizeForTest(ns), 0u);
}

}  // namespace
}  // namespace gradsync::coordinator

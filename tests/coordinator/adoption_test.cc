// A coordinator restarted on the same database adopts the generation its predecessor was running:
// the workers trained on, are told to register again, claim their ranks with the sessions they
// held, and the job goes on in the same generation, without a restart. Real gRPC server, real
// SQLite database on disk; the coordinator is destroyed and a new one opened on the database, as
// after a kill -9. A fake clock drives the grace period.
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "coordinator.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/rpc/server.h"
#include "grpc_services.h"
#include "gtest/gtest.h"
#include "sqlite_job_store.h"

namespace gradsync::coordinator {
namespace {

namespace fs = std::filesystem;

// A worker as the coordinator sees it over the wire: its registration, the session it presents,
// and the rank it runs.
struct TestWorker {
  std::string host;
  v1::RegisterWorkerResponse reg;
  v1::Assignment a;
};

class AdoptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("adoption-" + std::to_string(::getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    StartCoordinator();
  }
  void TearDown() override {
    StopCoordinator();
    fs::remove_all(dir_);
  }

  // A coordinator on the database (the previous one's, after StopCoordinator), serving gRPC.
  void StartCoordinator() {
    auto store = SqliteJobStore::Open((dir_ / "coordinator.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    CoordinatorOptions options;
    options.artifact_root = (dir_ / "artifacts").string();
    options.adopt_grace = absl::Seconds(20);
    // Longer than the grace: no lease runs out while the tests move the clock through it.
    options.lease_timeout = absl::Seconds(60);
    options.clock = [this] { return now_; };
    c_ = std::make_unique<Coordinator>(options, *std::move(store));
    service_ = std::make_unique<CoordinatorServiceImpl>(c_.get(), TokenAuth());
    auto server = rpc::StartServer("127.0.0.1:0", {service_.get()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  // The coordinator goes away with nothing said to its workers, as a killed process does.
  void StopCoordinator() {
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
    server_.reset();
    service_.reset();
    c_.reset();
  }

  // A stub whose calls carry `session` (none when empty).
  std::unique_ptr<v1::CoordinatorService::Stub> Stub(const std::string& session) {
    rpc::ChannelOptions options;
    if (!session.empty()) {
      auto header = std::make_shared<rpc::LateHeader>(rpc::kWorkerSessionMetadata);
      header->Set(session);
      options.late_header = header;
    }
    return v1::CoordinatorService::NewStub(rpc::MakeChannel("127.0.0.1:" + std::to_string(server_->port()), options));
  }

  TestWorker Register(const std::string& host) {
    TestWorker w;
    w.host = host;
    v1::RegisterWorkerRequest req;
    req.set_name(host);
    req.set_hostname(host);
    grpc::ClientContext ctx;
    EXPECT_TRUE(Stub("")->RegisterWorker(&ctx, req, &w.reg).ok());
    return w;
  }

  // `w` claims the rank it runs, presenting `session`; `claim` may be altered first.
  grpc::Status Claim(const TestWorker& w, const std::string& session, v1::RegisterWorkerResponse* out,
                     const std::function<void(v1::RunningRank*)>& alter = nullptr) {
    v1::RegisterWorkerRequest req;
    req.set_name(w.host);
    req.set_hostname(w.host);
    v1::RunningRank* running = req.mutable_running();
    running->set_job_id(w.a.job_id());
    running->set_generation(w.a.generation());
    running->set_rank(w.a.rank());
    running->set_world_size(w.a.world_size());
    running->set_worker_id(w.reg.worker_id());
    if (alter) alter(running);
    grpc::ClientContext ctx;
    return Stub(session)->RegisterWorker(&ctx, req, out);
  }
  // Claims `w`'s rank with its own session and takes on the new registration.
  void ClaimOwn(TestWorker* w) {
    v1::RegisterWorkerResponse resp;
    const grpc::Status s = Claim(*w, w->reg.session_token(), &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_TRUE(resp.adopted());
    EXPECT_EQ(resp.worker_id(), w->reg.worker_id()) << "the rank goes back under the same worker id";
    EXPECT_NE(resp.session_token(), w->reg.session_token()) << "with a new session";
    w->reg = resp;
  }

  v1::HeartbeatResponse Beat(const TestWorker& w) {
    v1::HeartbeatRequest req;
    req.set_worker_id(w.reg.worker_id());
    req.set_job_id(w.a.job_id());
    req.set_generation(w.a.generation());
    req.set_rank(w.a.rank());
    req.set_step(10);
    v1::HeartbeatResponse resp;
    grpc::ClientContext ctx;
    EXPECT_TRUE(Stub(w.reg.session_token())->Heartbeat(&ctx, req, &resp).ok());
    return resp;
  }

  // Writes `w`'s checkpoint part at `step` and reports it over the wire.
  v1::ReportCheckpointResponse Checkpoint(const TestWorker& w, int64_t step) {
    ckpt::RankState s;
    s.layout.Add("w", {4}, true);
    s.params = {1, 2, 3, static_cast<float>(step)};
    s.step = step;
    s.cursor = step * 10;
    s.rank = w.a.rank();
    s.world_size = w.a.world_size();
    const std::string dir = ckpt::CheckpointDir(w.a.checkpoint_root(), step);
    auto part = ckpt::WriteRankPart(dir, s);
    EXPECT_TRUE(part.ok()) << part.status();
    v1::ReportCheckpointRequest r;
    r.set_worker_id(w.reg.worker_id());
    r.set_job_id(w.a.job_id());
    r.set_generation(w.a.generation());
    r.set_rank(w.a.rank());
    r.set_step(step);
    r.set_cursor(step * 10);
    r.set_dir(dir);
    if (part.ok()) *r.mutable_part() = *part;
    v1::ReportCheckpointResponse resp;
    grpc::ClientContext ctx;
    const grpc::Status status = Stub(w.reg.session_token())->ReportCheckpoint(&ctx, r, &resp);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return resp;
  }

  grpc::Status Finish(const TestWorker& w, const std::string& error = "") {
    v1::ReportResultRequest r;
    r.set_worker_id(w.reg.worker_id());
    r.set_job_id(w.a.job_id());
    r.set_generation(w.a.generation());
    r.set_rank(w.a.rank());
    r.set_error(error);
    r.set_param_digest("fnv1a64:00000000000000aa");
    r.mutable_result()->set_global_step(50);
    v1::ReportResultResponse resp;
    grpc::ClientContext ctx;
    return Stub(w.reg.session_token())->ReportResult(&ctx, r, &resp);
  }

  // Two workers running generation 1 of a job of two ranks, with a checkpoint at step 10.
  std::string StartJob(TestWorker* w0, TestWorker* w1) {
    *w0 = Register("h0");
    *w1 = Register("h1");
    v1::JobSpec spec;
    spec.set_name("adopted");
    spec.mutable_training()->set_world_size(2);
    spec.mutable_training()->set_max_steps(50);
    auto job = c_->CreateJob(spec);
    EXPECT_TRUE(job.ok()) << job.status();
    for (TestWorker* w : {w0, w1}) {
      auto a = c_->NextAssignment(w->reg.worker_id(), absl::ZeroDuration());
      EXPECT_TRUE(a.ok() && a->has_value());
      if (a.ok() && a->has_value()) w->a = **a;
    }
    Checkpoint(*w0, 10);
    EXPECT_TRUE(Checkpoint(*w1, 10).committed());
    return job.ok() ? job->id() : "";
  }

  v1::Job Get(const std::string& id) { return c_->GetJob(id).value_or(v1::Job()); }
  static bool HasEvent(const v1::Job& job, const std::string& type, const std::string& text = "") {
    for (const v1::JobEvent& e : job.events()) {
      if (e.type() == type && absl::StrContains(e.message(), text)) return true;
    }
    return false;
  }

  fs::path dir_;
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  std::unique_ptr<Coordinator> c_;
  std::unique_ptr<CoordinatorServiceImpl> service_;
  std::unique_ptr<rpc::RunningServer> server_;
};

TEST_F(AdoptionTest, ARestartedCoordinatorAdoptsTheRunningGenerationAndTheJobEndsWithoutARestart) {
  TestWorker w0, w1;
  const std::string id = StartJob(&w0, &w1);
  StopCoordinator();
  StartCoordinator();

  v1::Job job = Get(id);
  EXPECT_EQ(job.state(), v1::RUNNING);
  EXPECT_EQ(job.generation(), 1);
  EXPECT_TRUE(HasEvent(job, "CoordinatorRestarted", "generation 1 kept; waiting up to 20s for its 2 ranks"))
      << job.DebugString();
  EXPECT_EQ(Beat(w0).action(), v1::HeartbeatResponse::REREGISTER);

  ClaimOwn(&w0);
  EXPECT_FALSE(HasEvent(Get(id), "GenerationAdopted")) << "rank 1 is not back yet";
  EXPECT_EQ(Beat(w0).action(), v1::HeartbeatResponse::CONTINUE);
  ClaimOwn(&w1);
  job = Get(id);
  EXPECT_TRUE(HasEvent(job, "GenerationAdopted",
                       "generation 1 goes on: rank 0 (worker " + w0.reg.worker_id() + " on h0), rank 1 (worker " +
                           w1.reg.worker_id() + " on h1) reported back"))
      << job.DebugString();

  // The adopted generation runs as one this coordinator scheduled: epoch plans, heartbeats,
  // checkpoints and results.
  v1::EpochPlanRequest plan_req;
  plan_req.set_job_id(id);
  plan_req.set_epoch(1);
  v1::EpochPlan plan;
  grpc::ClientContext plan_ctx;
  EXPECT_TRUE(Stub(w1.reg.session_token())->GetEpochPlan(&plan_ctx, plan_req, &plan).ok());
  EXPECT_EQ(Beat(w1).action(), v1::HeartbeatResponse::CONTINUE);
  EXPECT_FALSE(Checkpoint(w0, 20).committed());
  EXPECT_TRUE(Checkpoint(w1, 20).committed());
  EXPECT_EQ(Get(id).checkpoints().rbegin()->step(), 20);
  EXPECT_TRUE(Finish(w0).ok());
  EXPECT_TRUE(Finish(w1).ok());
  job = Get(id);
  EXPECT_EQ(job.state(), v1::SUCCEEDED) << job.DebugString();
  EXPECT_EQ(job.generation(), 1);
  EXPECT_EQ(job.restarts(), 0);
}

// The generation survives a second restart too: the store keeps the sessions the workers got
// when they were adopted.
TEST_F(AdoptionTest, AnAdoptedGenerationIsAdoptedAgainAfterAnotherRestart) {
  TestWorker w0, w1;
  const std::string id = StartJob(&w0, &w1);
  StopCoordinator();
  StartCoordinator();
  ClaimOwn(&w0);
  ClaimOwn(&w1);
  StopCoordinator();
  StartCoordinator();
  ClaimOwn(&w0);
  ClaimOwn(&w1);
  EXPECT_TRUE(Finish(w0).ok());
  EXPECT_TRUE(Finish(w1).ok());
  EXPECT_EQ(Get(id).state(), v1::SUCCEEDED);
  EXPECT_EQ(Get(id).restarts(), 0);
}

TEST_F(AdoptionTest, ClaimsTheStoredGenerationDoesNotBearOutAreRefused) {
  TestWorker w0, w1;
  const std::string id = StartJob(&w0, &w1);
  StopCoordinator();
  StartCoordinator();
  v1::RegisterWorkerResponse resp;
  auto code = [&](const TestWorker& w, const std::string& session, std::function<void(v1::RunningRank*)> alter) {
    const grpc::Status s = Claim(w, session, &resp, alter);
    return std::make_pair(s.error_code(), s.error_message());
  };
  auto other_generation = code(w1, w1.reg.session_token(), [](v1::RunningRank* r) { r->set_generation(2); });
  EXPECT_EQ(other_generation.first, grpc::StatusCode::FAILED_PRECONDITION) << other_generation.second;
  EXPECT_NE(other_generation.second.find("running.generation"), std::string::npos) << other_generation.second;
  auto unknown_job = code(w1, w1.reg.session_token(), [](v1::RunningRank* r) { r->set_job_id("nope-00000"); });
  EXPECT_EQ(unknown_job.first, grpc::StatusCode::FAILED_PRECONDITION) << unknown_job.second;
  auto outside = code(w1, w1.reg.session_token(), [](v1::RunningRank* r) { r->set_rank(2); });
  EXPECT_EQ(outside.first, grpc::StatusCode::INVALID_ARGUMENT) << outside.second;
  EXPECT_NE(outside.second.find("running.rank"), std::string::npos) << outside.second;
  // Another worker's rank, with its own session or none.
  auto stolen = code(w1, w1.reg.session_token(), [&](v1::RunningRank* r) {
    r->set_rank(0);
    r->set_worker_id(w0.reg.worker_id());
  });
  EXPECT_EQ(stolen.first, grpc::StatusCode::PERMISSION_DENIED) << stolen.second;
  auto bare = code(w1, "", nullptr);
  EXPECT_EQ(bare.first, grpc::StatusCode::UNAUTHENTICATED) << bare.second;
  auto guessed = code(w1, w1.reg.worker_id() + "." + std::string(64, '0'), nullptr);
  EXPECT_EQ(guessed.first, grpc::StatusCode::PERMISSION_DENIED) << guessed.second;

  // A rank goes back once.
  const v1::RegisterWorkerResponse old0 = w0.reg;
  ClaimOwn(&w0);
  TestWorker again = w0;
  again.reg = old0;
  auto twice = code(again, old0.session_token(), nullptr);
  EXPECT_EQ(twice.first, grpc::StatusCode::FAILED_PRECONDITION) << twice.second;
  EXPECT_NE(twice.second.find("back already"), std::string::npos) << twice.second;
  EXPECT_EQ(Get(id).state(), v1::RUNNING);
  EXPECT_EQ(Get(id).restarts(), 0);
}

TEST_F(AdoptionTest, ARankNotBackWithinTheGraceRestartsTheJobFromItsCheckpoint) {
  TestWorker w0, w1;
  const std::string id = StartJob(&w0, &w1);
  StopCoordinator();
  StartCoordinator();
  ClaimOwn(&w0);
  now_ += absl::Seconds(19);
  c_->CheckLeases();
  EXPECT_EQ(Get(id).state(), v1::RUNNING) << "within the grace";
  now_ += absl::Seconds(2);
  c_->CheckLeases();

  v1::Job job = Get(id);
  EXPECT_EQ(job.state(), v1::RESTARTING);
  EXPECT_EQ(job.restarts(), 1);
  EXPECT_TRUE(HasEvent(job, "AdoptionTimedOut",
                       "generation 1: rank 1 (worker " + w1.reg.worker_id() + " on h1) did not report back within 20s"))
      << job.DebugString();
  v1::RegisterWorkerResponse late;
  EXPECT_EQ(Claim(w1, w1.reg.session_token(), &late).error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  // The rank that came back stops (its result comes too late to count: FAILED_PRECONDITION), and
  // the next generation resumes from the checkpoint.
  EXPECT_EQ(Beat(w0).action(), v1::HeartbeatResponse::ABORT);
  EXPECT_EQ(Finish(w0, "ABORTED: the generation was aborted").error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_FALSE(Register("h2").reg.worker_id().empty());
  // It starts once the restart's verification of the checkpoint lands (on the verifier's thread).
  job = Get(id);
  for (const absl::Time deadline = absl::Now() + absl::Seconds(10);
       job.state() != v1::RUNNING && absl::Now() < deadline; job = Get(id)) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(job.state(), v1::RUNNING) << job.state_reason();
  EXPECT_EQ(job.generation(), 2);
  EXPECT_TRUE(HasEvent(job, "Scheduled", "resuming from the checkpoint at step 10")) << job.DebugString();
}

}  // namespace
}  // namespace gradsync::coordinator

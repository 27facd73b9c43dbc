// Durable or loud: with the disk full under a real SQLite database, a call whose change cannot be
// stored fails with an error naming the database, the API goes on showing the job as stored (what
// a restart would load), health is NOT_SERVING, and once the disk has room the kept change is
// written and health returns.
#include <unistd.h>

#include <filesystem>

#include "coordinator.h"
#include "coordinator_test_util.h"
#include "full_disk.h"
#include "gtest/gtest.h"
#include "rest_gateway.h"
#include "sqlite_job_store.h"

namespace gradsync::coordinator {
namespace {

class StoreFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) / ("store-failure-" + std::to_string(::getpid()) + "-" +
                                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    StartCoordinator();
  }
  void TearDown() override {
    c_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string Db() const { return (dir_ / "coordinator.db").string(); }

  // A coordinator on the database, as after a restart when one ran before.
  void StartCoordinator() {
    c_.reset();
    auto store = SqliteJobStore::Open(Db());
    ASSERT_TRUE(store.ok()) << store.status();
    CoordinatorOptions options;
    options.artifact_root = (dir_ / "artifacts").string();
    c_ = std::make_unique<Coordinator>(options, *std::move(store));
  }

  std::string Submit(int world_size) {
    v1::JobSpec spec;
    spec.mutable_training()->set_world_size(world_size);
    spec.mutable_training()->set_max_steps(5);
    auto job = c_->CreateJob(spec);
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? job->id() : "";
  }

  // The job as the database holds it, read through a connection of its own.
  v1::Job StoredInDb(const std::string& id) {
    auto store = SqliteJobStore::Open(Db());
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? (*store)->Get(id).value_or(v1::Job()) : v1::Job();
  }

  // A failed write names the database and is worth retrying.
  void ExpectStoreError(const absl::Status& s) {
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
    EXPECT_NE(s.message().find(Db()), std::string::npos) << s;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Coordinator> c_;
};

// The reproduced bug: the API said SUCCEEDED while the database kept RUNNING, so after a restart
// the job trained again.
TEST_F(StoreFailureTest, AJobSucceedsOnlyOnceItsEndIsStored) {
  const std::string worker = RegisterTestWorker(*c_, "h0");
  const std::string id = Submit(1);
  const v1::Assignment a = TakeTestAssignment(*c_, worker);
  ASSERT_EQ(c_->GetJob(id)->state(), v1::RUNNING);
  v1::ReportResultRequest done;
  done.set_worker_id(worker);
  done.set_job_id(id);
  done.set_generation(a.generation());
  done.set_rank(a.rank());
  done.set_param_digest("d");
  done.mutable_result()->set_global_step(5);
  {
    FullDisk full;
    ExpectStoreError(c_->ReportResult(done));
    EXPECT_EQ(c_->GetJob(id)->state(), v1::RUNNING) << "the API showed an end the database does not hold";
    EXPECT_EQ(c_->StoreHealth().code(), absl::StatusCode::kUnavailable);
    c_->RetryStoreWrites();
    EXPECT_FALSE(c_->StoreHealth().ok()) << "the disk is still full";
  }
  EXPECT_EQ(StoredInDb(id).state(), v1::RUNNING) << "what a restart loads is what the API showed";

  c_->RetryStoreWrites();
  EXPECT_TRUE(c_->StoreHealth().ok()) << c_->StoreHealth();
  EXPECT_EQ(c_->GetJob(id)->state(), v1::SUCCEEDED);
  StartCoordinator();
  EXPECT_EQ(c_->GetJob(id)->state(), v1::SUCCEEDED) << "the end was kept and written once the disk had room";
}

TEST_F(StoreFailureTest, ACancelThatCannotBeStoredFailsAndIsWrittenOnceTheDiskHasRoom) {
  const std::string id = Submit(2);
  {
    FullDisk full;
    ExpectStoreError(c_->CancelJob(id).status());
    ExpectStoreError(c_->CancelJob(id).status());  // not "already ended: CANCELLED"
    EXPECT_EQ(c_->GetJob(id)->state(), v1::PENDING);
    EXPECT_EQ(c_->ListJobs(0, "")->jobs(0).state(), v1::PENDING);
    auto watched = c_->WaitJobChange(id, 0, absl::ZeroDuration());
    ASSERT_TRUE(watched.ok()) << watched.status();
    EXPECT_EQ(watched->first.state(), v1::PENDING);
  }
  c_->RetryStoreWrites();
  EXPECT_TRUE(c_->StoreHealth().ok()) << c_->StoreHealth();
  EXPECT_EQ(c_->GetJob(id)->state(), v1::CANCELLED);
  EXPECT_EQ(c_->CancelJob(id).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(StoredInDb(id).state(), v1::CANCELLED);
}

TEST_F(StoreFailureTest, AFailedCreateLeavesTheStoreUnhealthyUntilAProbeWriteSucceeds) {
  {
    FullDisk full;
    v1::JobSpec spec;
    spec.mutable_training()->set_world_size(1);
    ExpectStoreError(c_->CreateJob(spec).status());
    EXPECT_EQ(c_->ListJobs(0, "")->jobs_size(), 0);
    EXPECT_FALSE(c_->StoreHealth().ok());
    c_->RetryStoreWrites();
    EXPECT_FALSE(c_->StoreHealth().ok()) << "a probe write on a full disk succeeded";
  }
  // No other call writes: the probe alone finds that writes succeed again.
  c_->RetryStoreWrites();
  EXPECT_TRUE(c_->StoreHealth().ok()) << c_->StoreHealth();
}

TEST_F(StoreFailureTest, ProgressThatCannotBeStoredIsNotShownAndTheWorkerGoesOn) {
  const std::string worker = RegisterTestWorker(*c_, "h0");
  const std::string id = Submit(1);
  const v1::Assignment a = TakeTestAssignment(*c_, worker);
  v1::HeartbeatRequest beat;
  beat.set_worker_id(worker);
  beat.set_job_id(id);
  beat.set_generation(a.generation());
  beat.mutable_progress()->set_step(3);
  {
    FullDisk full;
    EXPECT_EQ(c_->Heartbeat(beat).action(), v1::HeartbeatResponse::CONTINUE);
    EXPECT_FALSE(c_->StoreHealth().ok());
    EXPECT_NE(c_->GetJob(id)->progress().step(), 3);
  }
  c_->RetryStoreWrites();
  EXPECT_EQ(c_->GetJob(id)->progress().step(), 3);
}

TEST_F(StoreFailureTest, RestAnswers503AndHealthzIsNotServingWhileWritesFail) {
  const std::string id = Submit(2);
  RestApi api(c_.get(), TokenAuth());
  const http::Request healthz{"GET", "/healthz"};
  EXPECT_EQ(api.Handle(healthz).status, 200);
  {
    FullDisk full;
    const http::Reply cancel = api.Handle({"POST", "/v1/jobs/" + id + ":cancel"});
    EXPECT_EQ(cancel.status, 503) << cancel.body;
    EXPECT_NE(cancel.body.find(Db()), std::string::npos) << cancel.body;
    const http::Reply health = api.Handle(healthz);
    EXPECT_EQ(health.status, 503) << health.body;
    EXPECT_NE(health.body.find("NOT_SERVING"), std::string::npos) << health.body;
  }
  c_->RetryStoreWrites();
  EXPECT_EQ(api.Handle(healthz).status, 200);
}

}  // namespace
}  // namespace gradsync::coordinator

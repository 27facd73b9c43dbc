#include "sqlite_job_store.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "coordinator.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

class SqliteJobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) / ("sqlite-" + std::to_string(::getpid()) + "-" +
                                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Db() const { return (dir_ / "coordinator.db").string(); }

  static v1::Job Job(const std::string& id, v1::JobState state = v1::PENDING) {
    v1::Job j;
    j.set_id(id);
    j.set_name("jobs/" + id);
    j.set_state(state);
    j.mutable_spec()->set_name(id);
    return j;
  }

  std::filesystem::path dir_;
};

TEST_F(SqliteJobStoreTest, KeepsJobsAcrossReopenInCreationOrder) {
  {
    auto store = SqliteJobStore::Open(Db());
    ASSERT_TRUE(store.ok()) << store.status();
    for (const char* id : {"c", "a", "b"}) ASSERT_TRUE((*store)->Insert(Job(id)).ok());
    v1::Job updated = Job("a", v1::SUCCEEDED);
    updated.mutable_result()->set_final_loss(0.25);
    ASSERT_TRUE((*store)->Update(updated).ok());
    EXPECT_EQ((*store)->Insert(Job("a")).code(), absl::StatusCode::kAlreadyExists);
    EXPECT_EQ((*store)->Update(Job("zzz")).code(), absl::StatusCode::kNotFound);
  }
  auto store = SqliteJobStore::Open(Db());
  ASSERT_TRUE(store.ok()) << store.status();
  auto a = (*store)->Get("a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->state(), v1::SUCCEEDED);
  EXPECT_DOUBLE_EQ(a->result().final_loss(), 0.25);
  EXPECT_FALSE((*store)->Get("nope").has_value());
  auto all = (*store)->List("", 10);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id(), "c");
  EXPECT_EQ(all[2].id(), "b");
  auto after = (*store)->List("c", 1);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].id(), "a");
}

TEST_F(SqliteJobStoreTest, RefusesAFileThatIsNotADatabase) {
  std::ofstream(Db()) << "this is a text file, not SQLite, and it is long enough to have a header";
  auto store = SqliteJobStore::Open(Db());
  EXPECT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(Db()), std::string::npos) << store.status();
}

TEST_F(SqliteJobStoreTest, ACoordinatorRestartKeepsEveryJobAndRestartsRunningOnes) {
  CoordinatorOptions options;
  std::string pending_id, running_id, done_id;
  {
    Coordinator c(options, *SqliteJobStore::Open(Db()));
    v1::RegisterWorkerRequest w;
    w.set_hostname("h0");
    const std::string worker = c.RegisterWorker(w).worker_id();
    v1::JobSpec spec;
    spec.mutable_training()->set_max_steps(5);
    running_id = c.CreateJob(spec)->id();
    spec.mutable_training()->set_world_size(3);
    pending_id = c.CreateJob(spec)->id();
    spec.mutable_training()->set_world_size(1);
    done_id = c.CreateJob(spec)->id();
    ASSERT_TRUE(c.CancelJob(done_id).ok());
    EXPECT_EQ(c.GetJob(running_id)->state(), v1::RUNNING);
  }
  Coordinator c(options, *SqliteJobStore::Open(Db()));
  auto running = c.GetJob(running_id);
  ASSERT_TRUE(running.ok()) << running.status();
  EXPECT_EQ(running->state(), v1::RESTARTING);
  EXPECT_EQ(running->events().rbegin()->type(), "CoordinatorRestarted");
  EXPECT_EQ(c.GetJob(pending_id)->state(), v1::PENDING);
  EXPECT_EQ(c.GetJob(done_id)->state(), v1::CANCELLED);
  EXPECT_EQ(c.ListJobs(0, "")->jobs_size(), 3);

  // A worker joining the new coordinator picks the restarting job up as generation 2.
  v1::RegisterWorkerRequest w;
  w.set_hostname("h0");
  const std::string worker = c.RegisterWorker(w).worker_id();
  auto again = c.GetJob(running_id);
  EXPECT_EQ(again->state(), v1::RUNNING);
  EXPECT_EQ(again->generation(), 2);
  auto a = c.NextAssignment(worker, absl::ZeroDuration());
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->generation(), 2);
}

}  // namespace
}  // namespace gradsync::coordinator

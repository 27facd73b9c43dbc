#include "sqlite_job_store.h"

#include <sqlite3.h>
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

  // Runs `sql` on the database behind the store's back, as a damaged disk or another program might.
  void Tamper(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Db().c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }

  // Rows of the quarantine table: "<id>: <reason>".
  std::vector<std::string> Quarantined() {
    sqlite3* db = nullptr;
    std::vector<std::string> rows;
    EXPECT_EQ(sqlite3_open(Db().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT id, reason FROM quarantine ORDER BY seq;", -1, &stmt, nullptr), SQLITE_OK);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      rows.push_back(std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))) + ": " +
                     reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1)));
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return rows;
  }

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
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id(), "c");
  EXPECT_EQ((*all)[2].id(), "b");
  auto after = (*store)->List("c", 1);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].id(), "a");
}

TEST_F(SqliteJobStoreTest, RefusesAFileThatIsNotADatabase) {
  std::ofstream(Db()) << "this is a text file, not SQLite, and it is long enough to have a header";
  auto store = SqliteJobStore::Open(Db());
  EXPECT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(Db()), std::string::npos) << store.status();
}

// SQLite takes an empty file for a new database: the jobs would silently be gone.
TEST_F(SqliteJobStoreTest, RefusesAnEmptyFileNamingIt) {
  std::ofstream{Db()};
  ASSERT_EQ(std::filesystem::file_size(Db()), 0u);
  auto store = SqliteJobStore::Open(Db());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_NE(store.status().message().find(Db()), std::string::npos) << store.status();
  EXPECT_NE(store.status().message().find("empty"), std::string::npos) << store.status();
  EXPECT_EQ(std::filesystem::file_size(Db()), 0u) << "the file was left as it was";
}

TEST_F(SqliteJobStoreTest, AnAbsentFileIsAFreshDatabase) {
  {
    auto store = SqliteJobStore::Open(Db());
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_TRUE((*store)->List("", 10)->empty());
  }
  EXPECT_GT(std::filesystem::file_size(Db()), 0u);
  EXPECT_FALSE(std::filesystem::exists(Db() + ".new")) << "built under a temporary name, then renamed";
  EXPECT_TRUE(SqliteJobStore::Open(Db()).ok()) << "and it opens again";
}

TEST_F(SqliteJobStoreTest, RefusesASqliteDatabaseOfAnotherProgram) {
  Tamper("CREATE TABLE photos (path TEXT);");
  auto store = SqliteJobStore::Open(Db());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_NE(store.status().message().find(Db()), std::string::npos) << store.status();
}

TEST_F(SqliteJobStoreTest, RefusesANewerSchemaVersionNamingBothVersions) {
  { ASSERT_TRUE(SqliteJobStore::Open(Db()).ok()); }
  Tamper("UPDATE meta SET value = '7' WHERE key = 'schema_version';");
  auto store = SqliteJobStore::Open(Db());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_NE(store.status().message().find(Db()), std::string::npos) << store.status();
  EXPECT_NE(store.status().message().find("schema version 7"), std::string::npos) << store.status();
  EXPECT_NE(store.status().message().find("(2)"), std::string::npos) << store.status();
}

// A row that is not the job it names never becomes a job (a ghost with an empty id, before); it is
// moved aside, with the reason, and the other jobs load.
TEST_F(SqliteJobStoreTest, QuarantinesRowsThatAreNotTheirJob) {
  {
    auto store = SqliteJobStore::Open(Db());
    ASSERT_TRUE(store.ok()) << store.status();
    for (const char* id : {"good", "garbled", "swapped"}) ASSERT_TRUE((*store)->Insert(Job(id)).ok());
  }
  Tamper("UPDATE jobs SET job = x'ffffffff0102' WHERE id = 'garbled';");
  Tamper("UPDATE jobs SET job = (SELECT job FROM jobs WHERE id = 'good') WHERE id = 'swapped';");

  Coordinator c({}, *SqliteJobStore::Open(Db()));
  auto listed = c.ListJobs(0, "");
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->jobs_size(), 1);
  EXPECT_EQ(listed->jobs(0).id(), "good");
  const std::vector<std::string> quarantined = Quarantined();
  ASSERT_EQ(quarantined.size(), 2u);
  EXPECT_NE(quarantined[0].find("garbled: job row 2 (id \"garbled\") holds no job that parses"), std::string::npos)
      << quarantined[0];
  EXPECT_NE(quarantined[1].find("swapped: job row 3 (id \"swapped\") holds job \"good\""), std::string::npos)
      << quarantined[1];
}

TEST_F(SqliteJobStoreTest, ACoordinatorRestartKeepsEveryJobAndRestartsRunningOnes) {
  CoordinatorOptions options;
  // No adoption: a running job restarts at once (adoption_test.cc has the default).
  options.adopt_grace = absl::ZeroDuration();
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

// The database keeps the record of each running generation beside its job (schema version 2), for
// a coordinator started later to adopt; a database of version 1 opens, is upgraded in place, and its
// running jobs restart as they did before adoption existed, having no record.
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "coordinator.h"
#include "gtest/gtest.h"
#include "sqlite_job_store.h"

namespace gradsync::coordinator {
namespace {

class GenerationRecordStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) / ("generation-record-" + std::to_string(::getpid()) + "-" +
                                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Db() const { return (dir_ / "coordinator.db").string(); }

  // A database as a coordinator of schema version 1 left it, holding `job`.
  void WriteVersion1Database(const v1::Job& job) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Db().c_str(), &db), SQLITE_OK);
    const char* schema =
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, state INTEGER NOT NULL,"
        "  job BLOB NOT NULL);"
        "CREATE TABLE quarantine (seq INTEGER, id TEXT, state INTEGER, job BLOB, reason TEXT NOT NULL, time TEXT NOT "
        "NULL);"
        "INSERT INTO meta(key, value) VALUES ('schema_version', '1');";
    ASSERT_EQ(sqlite3_exec(db, schema, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "INSERT INTO jobs(id, state, job) VALUES (?1, ?2, ?3);", -1, &stmt, nullptr),
              SQLITE_OK);
    const std::string blob = job.SerializeAsString();
    sqlite3_bind_text(stmt, 1, job.id().c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(stmt, 2, job.state());
    sqlite3_bind_blob(stmt, 3, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
    EXPECT_EQ(sqlite3_step(stmt), SQLITE_DONE);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
  }

  std::string SchemaVersion() {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(Db().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    std::string version;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version';", -1, &stmt, nullptr) ==
            SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      version = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return version;
  }

  static v1::Job RunningJob(const std::string& id) {
    v1::Job job;
    job.set_id(id);
    job.set_name("jobs/" + id);
    job.set_state(v1::RUNNING);
    job.set_generation(1);
    job.mutable_spec()->mutable_training()->set_world_size(1);
    return job;
  }

  static v1::GenerationRecord Record(int generation) {
    v1::GenerationRecord record;
    record.set_generation(generation);
    v1::RankHolder* holder = record.add_ranks();
    holder->set_worker_id("w-00001");
    holder->set_hostname("h0");
    holder->set_session_sha256(std::string(64, 'a'));
    return record;
  }

  std::filesystem::path dir_;
};

TEST_F(GenerationRecordStoreTest, TheRecordIsKeptBesideTheJobAndClearedWithIt) {
  const v1::Job job = RunningJob("run");
  {
    auto store = SqliteJobStore::Open(Db());
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->Insert(job).ok());
    ASSERT_TRUE((*store)->UpdateWithGeneration(job, Record(1)).ok());
  }
  EXPECT_EQ(SchemaVersion(), "2");
  auto store = SqliteJobStore::Open(Db());
  ASSERT_TRUE(store.ok()) << store.status();
  auto records = (*store)->ListGenerations();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->count("run"), 1u);
  EXPECT_EQ(records->at("run").ranks(0).session_sha256(), std::string(64, 'a'));
  ASSERT_TRUE((*store)->Update(job).ok());
  EXPECT_TRUE((*store)->ListGenerations()->empty()) << "a write without a record clears it";
}

TEST_F(GenerationRecordStoreTest, AVersion1DatabaseIsUpgradedInPlaceAndKeepsItsJobs) {
  WriteVersion1Database(RunningJob("old"));
  {
    auto store = SqliteJobStore::Open(Db());
    ASSERT_TRUE(store.ok()) << store.status();
    auto listed = (*store)->List("", 10);
    ASSERT_TRUE(listed.ok()) << listed.status();
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ((*listed)[0].id(), "old");
    EXPECT_TRUE((*store)->ListGenerations()->empty());
    ASSERT_TRUE((*store)->UpdateWithGeneration((*listed)[0], Record(1)).ok());
  }
  EXPECT_EQ(SchemaVersion(), "2");
  auto store = SqliteJobStore::Open(Db());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->ListGenerations()->count("old"), 1u);
}

// A job a coordinator of version 1 left RUNNING has no record: it restarts, as it did then.
TEST_F(GenerationRecordStoreTest, ARunningJobWithoutARecordRestarts) {
  WriteVersion1Database(RunningJob("old"));
  CoordinatorOptions options;
  options.artifact_root = (dir_ / "artifacts").string();
  Coordinator c(options, *SqliteJobStore::Open(Db()));
  auto job = c.GetJob("old");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::RESTARTING);
  EXPECT_EQ(job->restarts(), 1);
  EXPECT_TRUE(absl::StrContains(job->events().rbegin()->message(), "generation 1 abandoned")) << job->DebugString();
}

}  // namespace
}  // namespace gradsync::coordinator

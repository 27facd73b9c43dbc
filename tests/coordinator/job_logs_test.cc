// Job logs on the coordinator: only the worker holding a rank of the running generation may ship
// its lines; readers get them numbered, filtered by rank and after a seq, within the bounds.
#include "job_logs.h"

#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "coordinator.h"
#include "coordinator_test_util.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

v1::ReportLogsRequest Batch(const std::string& worker, const std::string& job, int generation, int rank,
                            const std::vector<std::string>& messages, int64_t dropped = 0) {
  v1::ReportLogsRequest r;
  r.set_worker_id(worker);
  r.set_job_id(job);
  r.set_generation(generation);
  r.set_rank(rank);
  r.set_dropped(dropped);
  for (const std::string& m : messages) {
    v1::LogLine* l = r.add_lines();
    l->set_level("info");
    l->set_source("test.cc:1");
    l->set_message(m);
    l->set_rank(99);  // the coordinator takes the rank from who reported, not from the line
  }
  return r;
}

std::vector<std::string> Messages(const v1::GetJobLogsResponse& r) {
  std::vector<std::string> out;
  for (const v1::LogLine& l : r.lines()) out.push_back(l.message());
  return out;
}

class JobLogsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    worker_ = RegisterTestWorker(c_, "h0");
    v1::JobSpec spec;
    spec.mutable_training()->set_max_steps(100);
    id_ = c_.CreateJob(spec)->id();
    a_ = TakeTestAssignment(c_, worker_);
    intruder_ = RegisterTestWorker(c_, "h1");
  }

  v1::GetJobLogsResponse Read(std::optional<int> rank = std::nullopt, int64_t after = 0, int limit = 0) {
    v1::GetJobLogsRequest r;
    r.set_name("jobs/" + id_);
    if (rank.has_value()) r.set_rank(*rank);
    r.set_after_seq(after);
    r.set_limit(limit);
    absl::StatusOr<v1::GetJobLogsResponse> got = c_.GetJobLogs(r);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.value_or(v1::GetJobLogsResponse());
  }

  Coordinator c_{{}, std::make_unique<InMemoryJobStore>()};
  std::string worker_, intruder_, id_;
  v1::Assignment a_;
};

TEST_F(JobLogsTest, TheRanksWorkerShipsLinesThatReadBackNumberedInOrder) {
  ASSERT_TRUE(c_.ReportLogs(Batch(worker_, id_, a_.generation(), 0, {"one", "two"})).ok());
  ASSERT_TRUE(c_.ReportLogs(Batch(worker_, id_, a_.generation(), 0, {"three"}, /*dropped=*/4)).ok());
  const v1::GetJobLogsResponse all = Read();
  EXPECT_EQ(Messages(all), (std::vector<std::string>{"one", "two", "three"}));
  ASSERT_EQ(all.lines_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(all.lines(i).seq(), i + 1);
    EXPECT_EQ(all.lines(i).rank(), 0);
    EXPECT_EQ(all.lines(i).generation(), a_.generation());
  }
  EXPECT_EQ(all.last_seq(), 3);
  EXPECT_EQ(all.dropped(), 4);
  EXPECT_EQ(Messages(Read(std::nullopt, /*after=*/2)), std::vector<std::string>{"three"});
  EXPECT_EQ(Messages(Read(std::nullopt, 0, /*limit=*/1)), std::vector<std::string>{"one"});
  EXPECT_TRUE(Read(/*rank=*/1).lines().empty());
  EXPECT_EQ(Read(/*rank=*/1).last_seq(), 3) << "a reader of one rank still learns where the job is";
}

TEST_F(JobLogsTest, OnlyTheWorkerHoldingTheRankOfTheRunningGenerationMayShip) {
  absl::Status intruder = c_.ReportLogs(Batch(intruder_, id_, a_.generation(), 0, {"forged"}));
  EXPECT_EQ(intruder.code(), absl::StatusCode::kPermissionDenied) << intruder;
  absl::Status outside = c_.ReportLogs(Batch(worker_, id_, a_.generation(), 1, {"forged"}));
  EXPECT_EQ(outside.code(), absl::StatusCode::kPermissionDenied) << outside;
  absl::Status old = c_.ReportLogs(Batch(worker_, id_, a_.generation() + 1, 0, {"stale"}));
  EXPECT_EQ(old.code(), absl::StatusCode::kFailedPrecondition) << old;
  absl::Status unknown = c_.ReportLogs(Batch(worker_, "no-such-job", 1, 0, {"x"}));
  EXPECT_EQ(unknown.code(), absl::StatusCode::kFailedPrecondition) << unknown;
  EXPECT_TRUE(Read().lines().empty()) << "nothing refused is kept";
  const std::vector<std::string> many(501, "x");
  absl::Status big = c_.ReportLogs(Batch(worker_, id_, a_.generation(), 0, many));
  EXPECT_EQ(big.code(), absl::StatusCode::kInvalidArgument) << big;
  EXPECT_TRUE(absl::StrContains(big.message(), "lines")) << big;
}

TEST_F(JobLogsTest, ReadingNamesBadArgumentsAndUnknownJobs) {
  v1::GetJobLogsRequest r;
  r.set_name("jobs/none-such");
  EXPECT_EQ(c_.GetJobLogs(r).status().code(), absl::StatusCode::kNotFound);
  r.set_name(id_);
  r.set_limit(-1);
  EXPECT_TRUE(absl::StrContains(c_.GetJobLogs(r).status().message(), "limit")) << c_.GetJobLogs(r).status();
  r.set_limit(0);
  r.set_rank(-2);
  EXPECT_TRUE(absl::StrContains(c_.GetJobLogs(r).status().message(), "rank"));
  r.clear_rank();
  r.set_after_seq(-1);
  EXPECT_TRUE(absl::StrContains(c_.GetJobLogs(r).status().message(), "afterSeq"));
}

TEST(JobLogStore, AJobKeepsItsNewestLinesWithinItsBoundAndCountsTheRest) {
  const size_t line = 100 + 9 + 4 + 64;  // message, source, level and the fixed cost of a line
  JobLogStore store({.max_job_bytes = 10 * line, .max_total_bytes = 1 << 20});
  for (int i = 0; i < 25; ++i) {
    store.Append(Batch("w", "j", 1, 0, {std::string(100, 'a')}), absl::Now());
  }
  const v1::GetJobLogsResponse r = store.Read("j", std::nullopt, 0, 0);
  ASSERT_EQ(r.lines_size(), 10);
  EXPECT_EQ(r.lines(0).seq(), 16);
  EXPECT_EQ(r.lines(9).seq(), 25);
  EXPECT_EQ(r.dropped(), 15);
  EXPECT_EQ(store.total_bytes(), 10 * line);
}

TEST(JobLogStore, AllJobsStayWithinTheTotalTheOneAppendedToLongestAgoLosingLinesFirst) {
  const size_t line = 100 + 9 + 4 + 64;
  JobLogStore store({.max_job_bytes = 1 << 20, .max_total_bytes = 20 * line});
  const absl::Time t0 = absl::UnixEpoch() + absl::Hours(1);
  for (int i = 0; i < 12; ++i) store.Append(Batch("w", "old", 1, 0, {std::string(100, 'o')}), t0);
  for (int i = 0; i < 12; ++i) store.Append(Batch("w", "new", 1, 0, {std::string(100, 'n')}), t0 + absl::Seconds(1));
  EXPECT_EQ(store.total_bytes(), 20 * line);
  EXPECT_EQ(store.Read("new", std::nullopt, 0, 0).lines_size(), 12);
  EXPECT_EQ(store.Read("old", std::nullopt, 0, 0).lines_size(), 8);
  EXPECT_EQ(store.Read("old", std::nullopt, 0, 0).dropped(), 4);
}

TEST(JobLogStore, EveryFieldIsBoundedAsItArrivesSoTheStoreStaysWithinItsBytes) {
  JobLogStore store({.max_job_bytes = 1 << 20, .max_total_bytes = 1 << 20});
  v1::ReportLogsRequest batch = Batch("w", "j", 1, 0, {});
  for (int i = 0; i < 24; ++i) {
    v1::LogLine* l = batch.add_lines();
    l->set_level(std::string(40000, 'L'));
    l->set_source(std::string(40000, 's'));
    // A multi-byte character straddles the cut: it goes whole.
    l->set_message(std::string(kMaxLogMessageBytes - 1, 'm') + "\xc3\xa9" + std::string(100000, 'm'));
  }
  store.Append(batch, absl::Now());
  const v1::GetJobLogsResponse r = store.Read("j", std::nullopt, 0, 0);
  ASSERT_EQ(r.lines_size(), 24);
  EXPECT_EQ(r.lines(0).level(), "info");
  EXPECT_EQ(r.lines(0).source().size(), kMaxLogSourceBytes);
  EXPECT_EQ(r.lines(0).message(), std::string(kMaxLogMessageBytes - 1, 'm'));
  // 24 lines of at most 2 KiB + 128 + 4 + 64 bytes, where the level alone used to be 40 kB each.
  EXPECT_EQ(store.total_bytes(), 24 * (kMaxLogMessageBytes - 1 + kMaxLogSourceBytes + 4 + 64));
}

TEST(JobLogStore, ATimeNoTimestampCanHoldAndAnEndlessDropCountStillReadBack) {
  JobLogStore store(JobLogBounds{});
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  v1::ReportLogsRequest batch = Batch("w", "j", 1, 0, {"from the far future"}, std::numeric_limits<int64_t>::max());
  batch.mutable_lines(0)->mutable_time()->set_seconds(int64_t{1} << 62);
  store.Append(batch, now);
  store.Append(Batch("w", "j", 1, 0, {}, std::numeric_limits<int64_t>::max()), now);
  const v1::GetJobLogsResponse r = store.Read("j", std::nullopt, 0, 0);
  ASSERT_EQ(r.lines_size(), 1);
  EXPECT_EQ(r.lines(0).time().seconds(), 1'800'000'000);
  EXPECT_EQ(r.dropped(), std::numeric_limits<int64_t>::max());
  std::string json;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(r, &json).ok()) << "the REST answer would be cut";
}

}  // namespace
}  // namespace gradsync::coordinator

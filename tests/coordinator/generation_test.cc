// The coordinator's state owners without a Coordinator: a Generation's checkpoint parts and
// results, a worker's lease through the end of its generation, and a job's restart budget and
// last call.
#include "generation.h"

#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"
#include "job_runtime.h"
#include "worker_pool.h"

namespace gradsync::coordinator {
namespace {

using ::testing::HasSubstr;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

v1::ReportCheckpointRequest Part(int rank, int64_t step, int64_t bytes) {
  v1::ReportCheckpointRequest p;
  p.set_rank(rank);
  p.set_step(step);
  p.set_cursor(step * 10);
  p.set_dir("/ckpt/step-" + std::to_string(step));
  p.mutable_part()->set_bytes(bytes);
  *p.mutable_boundary_time() =
      google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(kStart + absl::Seconds(rank)));
  return p;
}

v1::ReportResultRequest Result(int rank, const std::string& digest) {
  v1::ReportResultRequest r;
  r.set_rank(rank);
  r.set_param_digest(digest);
  r.mutable_result()->set_global_step(10);
  return r;
}

TEST(GenerationTest, TheLastPartOfAStepCommitsItAndEarlierStepsAreForgotten) {
  Generation gen("j", 3, {"w0", "w1"}, kStart);
  EXPECT_EQ(gen.kv_namespace(), "j/3");
  EXPECT_FALSE(gen.AddCheckpointPart(Part(0, 10, 100), kStart).has_value());
  EXPECT_FALSE(gen.AddCheckpointPart(Part(1, 20, 100), kStart).has_value());
  auto m = gen.AddCheckpointPart(Part(0, 20, 300), kStart + absl::Seconds(5));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->job_id(), "j");
  EXPECT_EQ(m->generation(), 3);
  EXPECT_EQ(m->step(), 20);
  EXPECT_EQ(m->world_size(), 2);
  EXPECT_EQ(m->total_bytes(), 400);
  EXPECT_EQ(m->cursor(), 200) << "rank 0's data position";
  EXPECT_DOUBLE_EQ(m->duration_seconds(), 5) << "from the earliest boundary";
  EXPECT_FALSE(gen.AddCheckpointPart(Part(1, 10, 100), kStart).has_value())
      << "step 10's parts went with the commit of step 20";
}

TEST(GenerationTest, ResultsAgreeOnlyWhenEveryDigestIsRankZeros) {
  Generation agree("j", 1, {"w0", "w1"}, kStart);
  EXPECT_FALSE(agree.AddResult(Result(1, "d")));
  EXPECT_TRUE(agree.AddResult(Result(0, "d")));
  auto result = agree.AgreedResult();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->param_digest(), "d");
  EXPECT_EQ(result->global_step(), 10);

  Generation diverge("j", 1, {"w0", "w1"}, kStart);
  diverge.AddResult(Result(0, "a"));
  diverge.AddResult(Result(1, "b"));
  EXPECT_THAT(diverge.AgreedResult().status().message(), HasSubstr("replica divergence: ranks 0 and 1 differ"));
}
// Rank 0's figures stand for the job, but memory is each rank's own: under ddp.sharding the ranks
// hold different shards.
TEST(GenerationTest, TheAgreedResultGathersEveryRanksMemoryInRankOrder) {
  Generation gen("j", 1, {"w0", "w1", "w2"}, kStart);
  for (int rank : {2, 0, 1}) {
    v1::ReportResultRequest r = Result(rank, "d");
    v1::RankMemory* m = r.mutable_result()->add_memory();
    m->set_rank(rank == 2 ? 0 : rank);  // a rank names itself wrongly: its report's rank counts
    m->set_optimizer_bytes(100 + rank);
    m->set_peak_rss_bytes(1000 + rank);
    gen.AddResult(r);
  }
  auto result = gen.AgreedResult();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->memory_size(), 3);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(result->memory(rank).rank(), rank);
    EXPECT_EQ(result->memory(rank).optimizer_bytes(), 100 + rank);
    EXPECT_EQ(result->memory(rank).peak_rss_bytes(), 1000 + rank);
  }
}

TEST(WorkerLeaseTest, AWorkerThatNeverTookItsAssignmentIsFreedWhenItsGenerationEnds) {
  WorkerPool pool;
  WorkerLease& w = pool.Add("w0", {}, kStart);
  v1::Assignment a;
  a.set_job_id("j");
  a.set_generation(1);
  w.Assign(a);
  EXPECT_FALSE(w.idle());
  w.LeaveGeneration("j", 2, "other generation");
  EXPECT_FALSE(w.idle());
  w.LeaveGeneration("j", 1, "cancelled");
  EXPECT_TRUE(w.idle());
  EXPECT_FALSE(w.has_assignment());

  w.Assign(a);
  ASSERT_TRUE(w.TakeAssignment().has_value());
  w.LeaveGeneration("j", 1, "rank 1 failed");
  EXPECT_FALSE(w.idle()) << "a running worker stays until it stops";
  EXPECT_EQ(w.abort_reason(), "rank 1 failed");
  EXPECT_EQ(pool.Returning("j", 0), 1);
  EXPECT_EQ(pool.Returning("j", 1), 0) << "a rank of the running generation is not returning";
}

TEST(WorkerLeaseTest, LeasesExpireAfterTheTimeoutWithoutAHeartbeat) {
  WorkerPool pool;
  pool.Add("w0", {}, kStart);
  pool.Add("w1", {}, kStart);
  pool.Find("w1")->Renew(kStart + absl::Seconds(5));
  EXPECT_TRUE(pool.Expired(kStart + absl::Seconds(6), absl::Seconds(6)).empty());
  EXPECT_EQ(pool.Expired(kStart + absl::Seconds(7), absl::Seconds(6)), std::vector<std::string>{"w0"});
  pool.Remove("w0");
  ASSERT_EQ(pool.Idle().size(), 1u);
  EXPECT_EQ(pool.Idle()[0]->id(), "w1");
}

TEST(JobRuntimeTest, AnElasticJobWaitsItsLastCallThenStarts) {
  v1::Job job;
  job.set_id("j");
  job.mutable_spec()->mutable_training()->set_min_workers(1);
  job.mutable_spec()->mutable_training()->set_max_workers(3);
  JobRuntime rt(job);
  std::string reason;
  EXPECT_FALSE(rt.ReadyToStart({1, 1, 0}, kStart, absl::Seconds(2), &reason));
  EXPECT_EQ(reason, "1 of 1 to 3 workers idle; starting within 2s unless more join");
  EXPECT_FALSE(rt.ReadyToStart({1, 1, 1}, kStart + absl::Seconds(5), absl::Seconds(2), &reason));
  EXPECT_EQ(reason, "waiting for 1 workers of generation 0 to return");
  EXPECT_TRUE(rt.ReadyToStart({1, 1, 0}, kStart + absl::Seconds(2), absl::Seconds(2), &reason));
  Generation& gen = rt.StartGeneration({"w0"}, kStart);
  EXPECT_EQ(gen.number(), 1);
  EXPECT_EQ(rt.state(), v1::RUNNING);
  EXPECT_EQ(rt.RunningGeneration(1), &gen);
  EXPECT_EQ(rt.RunningGeneration(2), nullptr);
}

TEST(JobRuntimeTest, RestartsCountAgainstTheBudgetAndRescalesDoNot) {
  v1::Job job;
  job.mutable_spec()->mutable_training()->set_max_restarts(1);
  JobRuntime rt(job);
  rt.StartGeneration({"w0"}, kStart);
  EXPECT_NE(rt.EndGeneration(), nullptr);
  EXPECT_EQ(rt.generation(), nullptr);
  rt.Requeue("grow");
  EXPECT_EQ(rt.state(), v1::RESTARTING);
  EXPECT_TRUE(rt.CanRestart());
  rt.Restart("rank failed");
  EXPECT_EQ(rt.job().restarts(), 1);
  EXPECT_FALSE(rt.CanRestart());
}

}  // namespace
}  // namespace gradsync::coordinator

// Live recovery in the coordinator (recovery_ledger.h), with a fake clock: the survivors of a failed
// generation report the state they keep; the next generation's assignments name the furthest
// holder as the source instead of a checkpoint, the job gets QuorumChanged and, at the first step
// past the resume point, Recovered, with what the failure cost in its RecoveryStats. Under
// training.recovery "checkpoint", and when no holder is left, the checkpoint is used as before.
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator.h"
#include "coordinator_test_util.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

namespace fs = std::filesystem;

class LiveRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("live-recovery-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    CoordinatorOptions options;
    options.artifact_root = dir_.string();
    options.lease_timeout = absl::Seconds(6);
    options.clock = [this] { return now_; };
    c_ = std::make_unique<Coordinator>(options, std::make_unique<InMemoryJobStore>());
    for (const char* host : {"h0", "h1", "h2"}) w_.push_back(RegisterTestWorker(*c_, host));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // An elastic job of 1 to 3 ranks on the three workers, which commits a checkpoint at step 40
  // and reaches step 57; then rank 1's report fails it at now_ (t0), saying it keeps step 57, and
  // rank 0's says it keeps 58 (it finished the step the others failed in).
  void RunAndFail(const std::string& recovery) {
    v1::JobSpec spec;
    spec.set_name("live");
    spec.mutable_training()->set_min_workers(1);
    spec.mutable_training()->set_max_workers(3);
    spec.mutable_training()->set_max_steps(100);
    spec.mutable_training()->set_recovery(recovery);
    auto job = c_->CreateJob(spec);
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = job->id();
    for (const std::string& w : w_) a_.push_back(TakeTestAssignment(*c_, w));
    for (size_t r = 0; r < 3; ++r) ASSERT_TRUE(ReportTestCheckpoint(*c_, w_[r], a_[r], 40).ok());
    ASSERT_EQ(Get().checkpoints_size(), 1);
    Beat(0, &a_[0], 57);
    Beat(1, &a_[1], 57);
    t0_ = now_;
    Fail(1, 57, "UNAVAILABLE: allreduce #912 on rank 1 of 3 failed: rank 2 closed the connection");
    ASSERT_EQ(Get().state(), v1::RESTARTING);
    Fail(0, 58, "ABORTED: aborted by the coordinator");
  }

  void Fail(size_t rank, int64_t held, const std::string& error) {
    v1::ReportResultRequest r;
    r.set_worker_id(w_[rank]);
    r.set_job_id(job_);
    r.set_generation(1);
    r.set_rank(static_cast<int>(rank));
    r.set_error(error);
    r.mutable_result()->set_global_step(held);
    if (held > 0) {
      r.mutable_held()->set_generation(1);
      r.mutable_held()->set_step(held);
    }
    c_->ReportResult(r).IgnoreError();  // the generation may have ended: the worker is free either way
  }

  // A heartbeat of worker `w_[rank]`: in `a`'s generation at `step`, or idle when `a` is null.
  void Beat(size_t rank, const v1::Assignment* a = nullptr, int64_t step = 0) {
    v1::HeartbeatRequest hb;
    hb.set_worker_id(w_[rank]);
    if (a != nullptr) {
      hb.set_job_id(a->job_id());
      hb.set_generation(a->generation());
      hb.set_rank(a->rank());
      hb.set_step(step);
    }
    c_->Heartbeat(hb);
  }

  // Worker 2 never reports again: its lease runs out 7 s after t0 while the others beat, idle.
  void LoseWorker2() {
    now_ += absl::Seconds(7);
    Beat(0);
    Beat(1);
    c_->CheckLeases();
  }

  v1::Job Get() { return *c_->GetJob(job_); }
  // A generation resuming from a checkpoint starts once the verifier's thread has verified it.
  v1::Job WaitRunning() {
    v1::Job job = Get();
    for (const absl::Time deadline = absl::Now() + absl::Seconds(10);
         job.state() != v1::RUNNING && absl::Now() < deadline; job = Get()) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    return job;
  }
  bool HasEvent(const std::string& type, const std::string& text) {
    const v1::Job job = Get();
    for (const v1::JobEvent& e : job.events()) {
      if (e.type() == type && e.message().find(text) != std::string::npos) return true;
    }
    return false;
  }

  fs::path dir_;
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  absl::Time t0_;
  std::unique_ptr<Coordinator> c_;
  std::vector<std::string> w_;
  std::string job_;
  std::vector<v1::Assignment> a_;
};

TEST_F(LiveRecoveryTest, TheSurvivorsResumeFromTheFurthestStateTheyHoldWithNoCheckpointRead) {
  RunAndFail("live");
  LoseWorker2();
  ASSERT_EQ(Get().state(), v1::RUNNING) << Get().state_reason();
  ASSERT_EQ(Get().generation(), 2);
  const v1::Assignment b0 = TakeTestAssignment(*c_, w_[0]), b1 = TakeTestAssignment(*c_, w_[1]);
  for (const v1::Assignment& b : {b0, b1}) {
    EXPECT_EQ(b.world_size(), 2);
    EXPECT_TRUE(b.has_live_from());
    EXPECT_EQ(b.live_from().source_rank(), 0) << "worker 0 holds step 58, the furthest";
    EXPECT_EQ(b.live_from().step(), 58);
    EXPECT_FALSE(b.has_resume_from()) << "no checkpoint is read";
  }
  EXPECT_TRUE(HasEvent("Scheduled", "resuming live at step 58 from rank 0's memory")) << Get().DebugString();
  EXPECT_TRUE(HasEvent("QuorumChanged",
                       absl::StrCat("2 ranks (was 3); left: ", w_[2], " (rank 2); joined: none; resuming live at step 58 "
                                    "from rank 0's memory, step 59 retrained, no checkpoint read; the new quorum "
                                    "formed 7.00s after the failure")))
      << Get().DebugString();
  EXPECT_EQ(Get().recovery().live_recoveries(), 1);
  EXPECT_EQ(Get().recovery().steps_lost(), 0) << "the furthest committed step is the one resumed at";

  now_ += absl::Seconds(1);
  Beat(1, &b1, 58);
  EXPECT_FALSE(HasEvent("Recovered", "")) << "no step of the new generation committed yet";
  Beat(1, &b1, 59);
  EXPECT_TRUE(HasEvent("Recovered", "step 59 committed 8.00s after the failure (resumed live at step 58)"))
      << Get().DebugString();
  EXPECT_DOUBLE_EQ(Get().recovery().recovery_seconds(), absl::ToDoubleSeconds(now_ - t0_));
  EXPECT_DOUBLE_EQ(Get().recovery().last_recovery_seconds(), 8.0);
  EXPECT_EQ(Get().restarts(), 1) << "a failure is a restart, whatever it costs";
}

TEST_F(LiveRecoveryTest, UnderCheckpointRecoveryTheNextGenerationReadsTheCheckpoint) {
  RunAndFail("checkpoint");
  LoseWorker2();
  ASSERT_EQ(WaitRunning().state(), v1::RUNNING) << Get().state_reason();
  const v1::Assignment b0 = TakeTestAssignment(*c_, w_[0]);
  EXPECT_FALSE(b0.has_live_from());
  EXPECT_EQ(b0.resume_from().step(), 40);
  EXPECT_FALSE(HasEvent("QuorumChanged", ""));
  EXPECT_EQ(Get().recovery().checkpoint_recoveries(), 1);
  EXPECT_EQ(Get().recovery().live_recoveries(), 0);
  EXPECT_EQ(Get().recovery().steps_lost(), 18) << "steps 41 to 58 were committed and are trained again";
  Beat(0, &b0, 41);
  EXPECT_TRUE(HasEvent("Recovered", "(resumed from its checkpoint at step 40)")) << Get().DebugString();
}

TEST_F(LiveRecoveryTest, AHolderLostBeforeTheNextGenerationIsNoSource) {
  RunAndFail("live");
  // Workers 0 and 2 go silent; worker 1 (step 57) alone beats on.
  now_ += absl::Seconds(7);
  Beat(1);
  c_->CheckLeases();
  ASSERT_EQ(Get().state(), v1::RUNNING);
  const v1::Assignment alone = TakeTestAssignment(*c_, w_[1]);
  EXPECT_EQ(alone.live_from().step(), 57) << "worker 1's own state, since worker 0 (58) is lost";
  v1::ReportResultRequest r;
  r.set_worker_id(w_[1]);
  r.set_job_id(job_);
  r.set_generation(2);
  r.set_rank(0);
  r.set_error("INTERNAL: died");
  r.mutable_held()->set_generation(2);
  r.mutable_held()->set_step(60);
  ASSERT_TRUE(c_->ReportResult(r).ok());
  // Idle again with its state, worker 1 goes on alone at once, live from its own step 60.
  const v1::Assignment again = TakeTestAssignment(*c_, w_[1]);
  EXPECT_EQ(again.generation(), 3);
  EXPECT_EQ(again.live_from().step(), 60);
  // Then it goes silent too, and is lost with the state it held.
  now_ += absl::Seconds(7);
  const std::string fresh = RegisterTestWorker(*c_, "h3");
  c_->CheckLeases();  // worker 1 is lost with the state it held
  ASSERT_EQ(WaitRunning().state(), v1::RUNNING) << Get().state_reason();
  const v1::Assignment c0 = TakeTestAssignment(*c_, fresh);
  EXPECT_FALSE(c0.has_live_from()) << "nobody holds a state any more";
  EXPECT_EQ(c0.resume_from().step(), 40);
  EXPECT_EQ(Get().recovery().live_recoveries(), 2);
  EXPECT_EQ(Get().recovery().checkpoint_recoveries(), 1);
}

TEST_F(LiveRecoveryTest, AStateClaimedByAWorkerNotRunningThatRankIsIgnored) {
  RunAndFail("live");
  // Worker 1, its rank given back with its report, claims a further state than any survivor's,
  // once for its own rank and once for worker 2's.
  for (const int rank : {1, 2}) {
    v1::ReportResultRequest claim;
    claim.set_worker_id(w_[1]);
    claim.set_job_id(job_);
    claim.set_generation(1);
    claim.set_rank(rank);
    claim.set_error("INTERNAL: made up");
    claim.mutable_held()->set_generation(1);
    claim.mutable_held()->set_step(99);
    c_->ReportResult(claim).IgnoreError();
  }
  LoseWorker2();
  ASSERT_EQ(Get().state(), v1::RUNNING) << Get().state_reason();
  const v1::Assignment b0 = TakeTestAssignment(*c_, w_[0]);
  EXPECT_EQ(b0.live_from().source_rank(), 0);
  EXPECT_EQ(b0.live_from().step(), 58) << "the states the ranks reported, not the later claims";
}

}  // namespace
}  // namespace gradsync::coordinator

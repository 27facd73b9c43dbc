// The coordinator's logic without a server: scheduling, leases, results, cancellation.
#include "coordinator.h"

#include "coordinator_test_util.h"

#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

class CoordinatorTest : public ::testing::Test {
 protected:
  CoordinatorTest() {
    CoordinatorOptions options;
    options.lease_timeout = absl::Seconds(6);
    options.artifact_root = "/tmp/gradsync-test-artifacts";
    options.clock = [this] { return now_; };
    c_ = std::make_unique<Coordinator>(options, std::make_unique<InMemoryJobStore>());
  }

  std::string Register(const std::string& host) { return RegisterTestWorker(*c_, host); }

  v1::Job Submit(int world_size) {
    v1::JobSpec spec;
    spec.set_name("t");
    spec.mutable_training()->set_world_size(world_size);
    spec.mutable_training()->set_max_steps(10);
    auto job = c_->CreateJob(spec);
    EXPECT_TRUE(job.ok()) << job.status();
    return *job;
  }

  v1::Assignment Take(const std::string& worker) { return TakeTestAssignment(*c_, worker); }

  // `taken`: the generation still runs; otherwise its result is late, and answered so.
  void Report(const std::string& worker, const v1::Assignment& a, const std::string& digest,
              const std::string& error = "", bool taken = true) {
    v1::ReportResultRequest r;
    r.set_worker_id(worker);
    r.set_job_id(a.job_id());
    r.set_generation(a.generation());
    r.set_rank(a.rank());
    r.set_param_digest(digest);
    r.set_error(error);
    r.mutable_result()->set_global_step(10);
    const absl::Status s = c_->ReportResult(r);
    if (taken) {
      ASSERT_TRUE(s.ok()) << s;
    } else {
      ASSERT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    }
  }

  v1::JobState State(const v1::Job& job) { return c_->GetJob(job.name())->state(); }

  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  std::unique_ptr<Coordinator> c_;
};

TEST_F(CoordinatorTest, JobWaitsPendingWithAVisibleReasonUntilEnoughWorkers) {
  Register("h0");
  v1::Job job = Submit(2);
  auto got = c_->GetJob(job.id());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->state(), v1::PENDING);
  EXPECT_EQ(got->state_reason(), "waiting for 2 idle workers: 1 idle of 1 registered");
  Register("h1");
  EXPECT_EQ(State(job), v1::RUNNING);
  EXPECT_EQ(c_->GetJob(job.id())->generation(), 1);
}

// A client asking for a checkpoint over and over: the first request stands, the rest change
// nothing, so the job's history keeps its earlier events.
TEST_F(CoordinatorTest, RepeatedCheckpointRequestsAddOneEventUntilACheckpointIsTaken) {
  const std::string w0 = Register("h0");
  v1::Job job = Submit(1);
  Take(w0);
  const int before = c_->GetJob(job.name())->events_size();
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(c_->RequestCheckpoint(job.name()).ok());
  const v1::Job after = *c_->GetJob(job.name());
  EXPECT_EQ(after.events_size(), before + 1);
  EXPECT_EQ(after.events(0).type(), "Created");
  EXPECT_EQ(after.events().rbegin()->type(), "CheckpointRequested");
}

// MiniMind's `_ddp_params_and_buffers_to_ignore` copied into a llama job names its RoPE tables:
// accepted (they are buffers, never synchronised), and the job's events say so.
TEST_F(CoordinatorTest, IgnoringTheRopeBuffersOfALlamaIsAcceptedAndSaidInTheEvents) {
  v1::JobSpec spec;
  spec.set_name("rope");
  spec.mutable_model()->set_preset("gpt-tiny");
  spec.mutable_model()->mutable_transformer()->set_flavour("llama");
  spec.mutable_data()->mutable_text()->add_paths("corpus.txt");
  spec.mutable_training()->set_world_size(1);
  spec.mutable_ddp()->add_ignore_params("freqs_cos");
  spec.mutable_ddp()->add_ignore_params("freqs_sin");
  absl::StatusOr<v1::Job> job = c_->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  const v1::Job stored = *c_->GetJob(job->name());
  ASSERT_GE(stored.events_size(), 2);
  EXPECT_EQ(stored.events(1).type(), "IgnoredBuffers");
  EXPECT_NE(stored.events(1).message().find("freqs_cos, freqs_sin are the model's RoPE tables"), std::string::npos)
      << stored.events(1).message();
  // Without names of buffers, no such event.
  const v1::Job plain = *c_->GetJob(Submit(1).name());
  for (const v1::JobEvent& e : plain.events()) EXPECT_NE(e.type(), "IgnoredBuffers");
}

TEST_F(CoordinatorTest, GangGetsRanksZeroToNAndTheFilledSpec) {
  std::string w0 = Register("h0"), w1 = Register("h1"), w2 = Register("h2");
  v1::Job job = Submit(3);
  v1::Assignment a0 = Take(w0), a1 = Take(w1), a2 = Take(w2);
  EXPECT_EQ(a0.rank(), 0);
  EXPECT_EQ(a1.rank(), 1);
  EXPECT_EQ(a2.rank(), 2);
  EXPECT_EQ(a0.world_size(), 3);
  EXPECT_EQ(a0.generation(), 1);
  EXPECT_EQ(a0.spec().training().micro_batch(), 32) << "defaults must be filled in";
  EXPECT_EQ(a0.weights_path(), "/tmp/gradsync-test-artifacts/" + job.id() + "/weights.bin");
}

TEST_F(CoordinatorTest, InvalidSpecIsRefusedNamingTheField) {
  v1::JobSpec spec;
  spec.mutable_training()->set_world_size(-1);
  auto job = c_->CreateJob(spec);
  ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("training.worldSize"), std::string::npos) << job.status();
}

TEST_F(CoordinatorTest, EqualDigestsSucceedAndFreeTheWorkers) {
  std::string w0 = Register("h0"), w1 = Register("h1");
  v1::Job job = Submit(2);
  v1::Assignment a0 = Take(w0), a1 = Take(w1);
  Report(w1, a1, "fnv1a64:00000000000000aa");
  EXPECT_EQ(State(job), v1::RUNNING) << "must wait for every rank";
  Report(w0, a0, "fnv1a64:00000000000000aa");
  auto done = c_->GetJob(job.id());
  EXPECT_EQ(done->state(), v1::SUCCEEDED);
  EXPECT_EQ(done->result().param_digest(), "fnv1a64:00000000000000aa");
  // Both workers are idle again: a second 2-rank job is scheduled at once.
  v1::Job next = Submit(2);
  EXPECT_EQ(State(next), v1::RUNNING);
}

TEST_F(CoordinatorTest, DifferentDigestsFailWithReplicaDivergence) {
  std::string w0 = Register("h0"), w1 = Register("h1");
  v1::Job job = Submit(2);
  v1::Assignment a0 = Take(w0), a1 = Take(w1);
  Report(w0, a0, "fnv1a64:00000000000000aa");
  Report(w1, a1, "fnv1a64:00000000000000bb");
  auto done = c_->GetJob(job.id());
  EXPECT_EQ(done->state(), v1::FAILED);
  EXPECT_NE(done->state_reason().find("replica divergence: ranks 0 and 1 differ"), std::string::npos)
      << done->state_reason();
}

TEST_F(CoordinatorTest, ARankErrorRestartsTheJobAndAbortsTheOthers) {
  std::string w0 = Register("h0"), w1 = Register("h1");
  v1::Job job = Submit(2);
  v1::Assignment a0 = Take(w0), a1 = Take(w1);
  Report(w1, a1, "", "UNAVAILABLE: allreduce #7 on rank 1 of 2 failed: connection reset");
  auto restarting = c_->GetJob(job.id());
  EXPECT_EQ(restarting->state(), v1::RESTARTING);
  EXPECT_EQ(restarting->restarts(), 1);
  const v1::JobEvent& failure = *restarting->events().rbegin();
  EXPECT_EQ(failure.type(), "RankFailed");
  EXPECT_NE(failure.message().find("rank 1 on worker " + w1 + " failed: UNAVAILABLE"), std::string::npos)
      << failure.message();
  EXPECT_NE(failure.message().find("restarting (1 of 3)"), std::string::npos) << failure.message();
  v1::HeartbeatRequest hb;
  hb.set_worker_id(w0);
  hb.set_job_id(a0.job_id());
  hb.set_generation(1);
  EXPECT_EQ(c_->Heartbeat(hb).action(), v1::HeartbeatResponse::ABORT);
  // Rank 0 stops and reports, too late to count (FAILED_PRECONDITION); with both workers idle
  // again the job runs as generation 2.
  Report(w0, a0, "", "ABORTED: aborted by the coordinator at step 3", /*taken=*/false);
  auto again = c_->GetJob(job.id());
  EXPECT_EQ(again->state(), v1::RUNNING);
  EXPECT_EQ(again->generation(), 2);
}

TEST_F(CoordinatorTest, AnErrorARestartWouldRepeatFailsAtOnce) {
  std::string w0 = Register("h0");
  v1::Job job = Submit(1);
  Report(w0, Take(w0), "", "INVALID_ARGUMENT: /data/x.bin: not a token shard (magic 1, expected 20240520)");
  auto done = c_->GetJob(job.id());
  EXPECT_EQ(done->state(), v1::FAILED);
  EXPECT_EQ(done->restarts(), 0);
}

TEST_F(CoordinatorTest, TheRestartBudgetEndsInFailure) {
  std::string w0 = Register("h0");
  v1::JobSpec spec;
  spec.mutable_training()->set_max_steps(10);
  spec.mutable_training()->set_max_restarts(1);
  v1::Job job = *c_->CreateJob(spec);
  Report(w0, Take(w0), "", "UNAVAILABLE: broken pipe");
  EXPECT_EQ(c_->GetJob(job.id())->state(), v1::RUNNING) << "one restart is allowed";
  Report(w0, Take(w0), "", "UNAVAILABLE: broken pipe");
  auto done = c_->GetJob(job.id());
  EXPECT_EQ(done->state(), v1::FAILED);
  EXPECT_NE(done->state_reason().find("restart budget of 1 used up"), std::string::npos) << done->state_reason();
}

TEST_F(CoordinatorTest, ALostWorkerRestartsItsJobNamingTheRank) {
  std::string w0 = Register("h0"), w1 = Register("h1");
  v1::Job job = Submit(2);
  Take(w0);
  Take(w1);
  now_ += absl::Seconds(4);
  v1::HeartbeatRequest hb;
  hb.set_worker_id(w0);
  hb.set_job_id(job.id());
  hb.set_generation(1);
  c_->Heartbeat(hb);  // only w0 stays alive
  now_ += absl::Seconds(3);
  c_->CheckLeases();
  auto restarting = c_->GetJob(job.id());
  EXPECT_EQ(restarting->state(), v1::RESTARTING);
  const v1::JobEvent& lost_event = *restarting->events().rbegin();
  EXPECT_EQ(lost_event.type(), "WorkerLost");
  EXPECT_NE(lost_event.message().find("rank 1: worker " + w1), std::string::npos) << lost_event.message();
  EXPECT_EQ(c_->Heartbeat(hb).action(), v1::HeartbeatResponse::ABORT);
  v1::HeartbeatRequest lost;
  lost.set_worker_id(w1);
  EXPECT_EQ(c_->Heartbeat(lost).action(), v1::HeartbeatResponse::REREGISTER);
  // A spare joins: with the survivor it forms generation 2.
  v1::HeartbeatRequest idle;
  idle.set_worker_id(w0);
  c_->Heartbeat(idle);  // w0 has stopped and reports no job
  Register("spare");
  EXPECT_EQ(c_->GetJob(job.id())->state(), v1::RUNNING);
  EXPECT_EQ(c_->GetJob(job.id())->generation(), 2);
}

// ListWorkers: idle and busy workers in registration order with the rank held and the heartbeat
// age, then lost ones (with the rank they held) until an hour after their loss.
TEST_F(CoordinatorTest, ListWorkersShowsIdleBusyAndRecentlyLostWorkers) {
  const std::string w0 = Register("h0"), w1 = Register("h1"), w2 = Register("h2");
  const absl::Time registered = now_;
  v1::Job job = Submit(2);
  const v1::Assignment a0 = Take(w0);
  Take(w1);
  now_ += absl::Seconds(4);
  for (const std::string& w : {w0, w2}) {
    v1::HeartbeatRequest hb;
    hb.set_worker_id(w);
    if (w == w0) {
      hb.set_job_id(job.id());
      hb.set_generation(1);
    }
    c_->Heartbeat(hb);
  }
  now_ += absl::Seconds(1);
  v1::ListWorkersResponse listed = c_->ListWorkers();
  ASSERT_EQ(listed.workers_size(), 3);
  const v1::Worker& busy = listed.workers(0);
  EXPECT_EQ(busy.name(), "workers/" + w0);
  EXPECT_EQ(busy.hostname(), "h0");
  EXPECT_EQ(busy.state(), v1::WORKER_BUSY);
  EXPECT_EQ(busy.job_id(), job.id());
  EXPECT_EQ(busy.generation(), 1);
  ASSERT_TRUE(busy.has_rank());
  EXPECT_EQ(busy.rank(), a0.rank());
  EXPECT_EQ(busy.device().kind(), v1::Device::CPU);
  EXPECT_EQ(busy.heartbeat_age().seconds(), 1);
  EXPECT_EQ(busy.register_time().seconds(), absl::ToUnixSeconds(registered));
  EXPECT_EQ(listed.workers(1).id(), w1);
  EXPECT_EQ(listed.workers(1).heartbeat_age().seconds(), 5);
  EXPECT_EQ(listed.workers(2).id(), w2);
  EXPECT_EQ(listed.workers(2).state(), v1::WORKER_IDLE);
  EXPECT_FALSE(listed.workers(2).has_rank());
  EXPECT_TRUE(listed.workers(2).job_id().empty());

  // w1 misses its lease (6 s): it is listed after the pool, lost, with the rank it held.
  now_ += absl::Seconds(2);
  c_->CheckLeases();
  listed = c_->ListWorkers();
  ASSERT_EQ(listed.workers_size(), 3);
  const v1::Worker& lost = listed.workers(2);
  EXPECT_EQ(lost.id(), w1);
  EXPECT_EQ(lost.state(), v1::WORKER_LOST);
  EXPECT_EQ(lost.job_id(), job.id());
  EXPECT_TRUE(lost.has_rank());
  EXPECT_EQ(lost.lost_time().seconds(), absl::ToUnixSeconds(now_));
  EXPECT_EQ(lost.heartbeat_age().seconds(), 7);
  now_ += absl::Minutes(59);
  EXPECT_EQ(c_->ListWorkers().workers_size(), 3) << "kept for an hour";
  now_ += absl::Minutes(2);
  listed = c_->ListWorkers();
  for (const v1::Worker& w : listed.workers()) EXPECT_NE(w.state(), v1::WORKER_LOST) << w.id();
}

// A worker that keeps dying and registering again cannot grow the list of lost workers past its
// bound: the oldest losses go first.
TEST(LostWorkers, KeepsTheMostRecentLossesOnly) {
  LostWorkers lost;
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  for (size_t i = 0; i < LostWorkers::kMaxKept + 10; ++i) {
    lost.Add(WorkerLease("w" + std::to_string(i), v1::RegisterWorkerRequest(), t0), t0 + absl::Seconds(i));
  }
  const std::vector<v1::Worker> recent = lost.Recent(t0 + absl::Seconds(LostWorkers::kMaxKept + 10));
  ASSERT_EQ(recent.size(), LostWorkers::kMaxKept);
  EXPECT_EQ(recent.front().id(), "w10");
  EXPECT_EQ(recent.back().id(), "w" + std::to_string(LostWorkers::kMaxKept + 9));
}

TEST_F(CoordinatorTest, CancelEndsAPendingOrRunningJobOnce) {
  v1::Job pending = Submit(4);
  auto cancelled = c_->CancelJob(pending.name());
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state(), v1::CANCELLED);
  EXPECT_EQ(c_->CancelJob(pending.name()).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(c_->CancelJob("jobs/nope").status().code(), absl::StatusCode::kNotFound);
}

v1::HeartbeatRequest Beat(const std::string& worker, const v1::Assignment& a) {
  v1::HeartbeatRequest hb;
  hb.set_worker_id(worker);
  hb.set_job_id(a.job_id());
  hb.set_generation(a.generation());
  hb.set_rank(a.rank());
  return hb;
}

// A cancel used to end a running job at once and abort its ranks: no weights, no final checkpoint.
// Now the ranks hear STOP, stop at a step boundary, save and report; their result ends the job
// CANCELLED, with the weights path and the step reached.
TEST_F(CoordinatorTest, CancellingARunningJobStopsItsRanksAndEndsCancelledWithTheirResult) {
  std::string w0 = Register("h0"), w1 = Register("h1");
  v1::Job job = Submit(2);
  v1::Assignment a0 = Take(w0), a1 = Take(w1);
  auto cancelling = c_->CancelJob(job.name());
  ASSERT_TRUE(cancelling.ok()) << cancelling.status();
  EXPECT_EQ(cancelling->state(), v1::RUNNING);
  EXPECT_EQ(cancelling->state_reason(), "cancelling: the ranks stop at the next step boundary and save the weights");
  EXPECT_EQ(cancelling->events().rbegin()->type(), "CancelRequested");
  EXPECT_EQ(c_->Heartbeat(Beat(w0, a0)).action(), v1::HeartbeatResponse::STOP);
  EXPECT_EQ(c_->Heartbeat(Beat(w1, a1)).action(), v1::HeartbeatResponse::STOP);
  Report(w1, a1, "fnv1a64:00000000000000aa");
  EXPECT_EQ(State(job), v1::RUNNING);
  v1::ReportResultRequest r;
  r.set_worker_id(w0);
  r.set_job_id(a0.job_id());
  r.set_generation(1);
  r.set_param_digest("fnv1a64:00000000000000aa");
  r.mutable_result()->set_global_step(4);
  r.mutable_result()->set_weights_path(a0.weights_path());
  ASSERT_TRUE(c_->ReportResult(r).ok());
  auto done = c_->GetJob(job.id());
  EXPECT_EQ(done->state(), v1::CANCELLED);
  EXPECT_EQ(done->result().global_step(), 4);
  EXPECT_EQ(done->result().weights_path(), a0.weights_path());
  EXPECT_NE(done->state_reason().find("cancelled by request: stopped at step 4"), std::string::npos)
      << done->state_reason();
  EXPECT_EQ(State(Submit(2)), v1::RUNNING) << "both workers are free again";
}

// Ranks that never stop (a hung collective) do not hold a cancel up beyond the grace; nor does a
// second cancel wait; a rank failing meanwhile ends the job CANCELLED, not restarted.
TEST_F(CoordinatorTest, ACancelAbortsRanksThatDoNotStopInTime) {
  std::string w0 = Register("h0"), w1 = Register("h1");
  v1::Job slow = Submit(2);
  v1::Assignment a0 = Take(w0), a1 = Take(w1);
  ASSERT_TRUE(c_->CancelJob(slow.name()).ok());
  for (int i = 0; i < 15; ++i) {
    EXPECT_EQ(State(slow), v1::RUNNING) << "after " << 2 * i << "s";
    c_->Heartbeat(Beat(w0, a0));
    c_->Heartbeat(Beat(w1, a1));
    now_ += absl::Seconds(2);
    c_->CheckLeases();
  }
  auto done = c_->GetJob(slow.id());
  EXPECT_EQ(done->state(), v1::CANCELLED);
  EXPECT_NE(done->state_reason().find("did not stop within 30s"), std::string::npos) << done->state_reason();
  EXPECT_EQ(c_->Heartbeat(Beat(w0, a0)).action(), v1::HeartbeatResponse::ABORT);
  Report(w0, a0, "", "ABORTED: aborted by the coordinator at step 3", /*taken=*/false);
  Report(w1, a1, "", "ABORTED: aborted by the coordinator at step 3", /*taken=*/false);

  v1::Job twice = Submit(2);
  v1::Assignment b0 = Take(w0), b1 = Take(w1);
  ASSERT_TRUE(c_->CancelJob(twice.name()).ok());
  auto again = c_->CancelJob(twice.name());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->state(), v1::CANCELLED);
  Report(w0, b0, "", "ABORTED: aborted by the coordinator at step 3", /*taken=*/false);
  Report(w1, b1, "", "ABORTED: aborted by the coordinator at step 3", /*taken=*/false);

  v1::Job failing = Submit(2);
  v1::Assignment c0 = Take(w0);
  Take(w1);
  ASSERT_TRUE(c_->CancelJob(failing.name()).ok());
  Report(w0, c0, "", "UNAVAILABLE: allreduce #7 on rank 0 of 2 failed: connection reset");
  auto ended = c_->GetJob(failing.id());
  EXPECT_EQ(ended->state(), v1::CANCELLED);
  EXPECT_EQ(ended->restarts(), 0);
}

// A FAILED job's summary said step 0 and losses 0. It reports what was reached: the failing rank's
// figures (every rank holds the step and the losses agreed across ranks), else rank 0's progress.
TEST_F(CoordinatorTest, AFailedJobReportsTheStepAndLossesItReached) {
  std::string w0 = Register("h0");
  v1::Job job = Submit(1);
  v1::Assignment a = Take(w0);
  v1::ReportResultRequest r;
  r.set_worker_id(w0);
  r.set_job_id(a.job_id());
  r.set_generation(1);
  r.set_error("INVALID_ARGUMENT: loss is inf at step 7");
  r.mutable_result()->set_global_step(7);
  r.mutable_result()->set_initial_loss(2.5);
  r.mutable_result()->set_final_loss(1.25);
  ASSERT_TRUE(c_->ReportResult(r).ok());
  auto failed = c_->GetJob(job.id());
  EXPECT_EQ(failed->state(), v1::FAILED);
  EXPECT_EQ(failed->result().global_step(), 7);
  EXPECT_EQ(failed->result().initial_loss(), 2.5);
  EXPECT_EQ(failed->result().final_loss(), 1.25);

  // Lost without a report: the progress rank 0's heartbeats carried.
  v1::JobSpec spec;
  spec.mutable_training()->set_max_steps(10);
  spec.mutable_training()->set_max_restarts(0);
  v1::Job lost = *c_->CreateJob(spec);
  v1::Assignment b = Take(w0);
  for (auto [step, loss] : {std::pair{1, 3.0}, std::pair{5, 2.0}}) {
    v1::HeartbeatRequest hb = Beat(w0, b);
    hb.mutable_progress()->set_step(step);
    hb.mutable_progress()->set_loss(loss);
    c_->Heartbeat(hb);
  }
  now_ += absl::Seconds(7);
  c_->CheckLeases();
  auto gone = c_->GetJob(lost.id());
  EXPECT_EQ(gone->state(), v1::FAILED);
  EXPECT_EQ(gone->result().global_step(), 5);
  EXPECT_EQ(gone->result().initial_loss(), 3.0);
  EXPECT_EQ(gone->result().final_loss(), 2.0);
}

TEST_F(CoordinatorTest, BackfillsSmallerJobsBehindALargeOne) {
  Register("h0");
  v1::Job big = Submit(2);
  v1::Job small = Submit(1);
  EXPECT_EQ(State(big), v1::PENDING);
  EXPECT_EQ(State(small), v1::RUNNING);
}

TEST_F(CoordinatorTest, ListPagesInCreationOrder) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(Submit(8).id());
  auto p1 = c_->ListJobs(2, "");
  ASSERT_TRUE(p1.ok());
  ASSERT_EQ(p1->jobs_size(), 2);
  EXPECT_EQ(p1->jobs(0).id(), ids[0]);
  auto p2 = c_->ListJobs(2, p1->next_page_token());
  auto p3 = c_->ListJobs(2, p2->next_page_token());
  EXPECT_EQ(p2->jobs(1).id(), ids[3]);
  ASSERT_EQ(p3->jobs_size(), 1);
  EXPECT_EQ(p3->jobs(0).id(), ids[4]);
  EXPECT_TRUE(p3->next_page_token().empty());
  EXPECT_EQ(c_->ListJobs(2, "bogus").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CoordinatorTest, WatchSeesEveryChange) {
  v1::Job job = Submit(1);
  auto first = c_->WaitJobChange(job.name(), 0, absl::ZeroDuration());
  ASSERT_TRUE(first.ok());
  const int64_t v = first->second;
  auto none = c_->WaitJobChange(job.name(), v, absl::Milliseconds(10));
  EXPECT_EQ(none->second, v);
  Register("h0");
  auto changed = c_->WaitJobChange(job.name(), v, absl::Seconds(1));
  EXPECT_GT(changed->second, v);
  EXPECT_EQ(changed->first.state(), v1::RUNNING);
}

TEST_F(CoordinatorTest, EpochPlanIsAPureFunctionOfSeedAndEpoch) {
  v1::Job job = Submit(1);
  auto e0 = c_->GetEpochPlan(job.id(), 0), e1 = c_->GetEpochPlan(job.id(), 1);
  ASSERT_TRUE(e0.ok() && e1.ok());
  EXPECT_NE(e0->seed(), e1->seed());
  EXPECT_EQ(e0->seed(), c_->GetEpochPlan(job.id(), 0)->seed());
  EXPECT_EQ(c_->GetEpochPlan(job.id(), -1).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync::coordinator

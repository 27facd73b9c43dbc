// Live recovery in the training library (gradsync/train/live_state.h), on real Gloo ranks as
// threads: four ranks train, one leaves after step K (its replica and sockets go), the others'
// next step fails and is aborted, and each keeps the state of step K (TrainLoop::Hold). A new
// generation of three (the survivors, or two of them and a fresh rank that holds nothing) receives
// that state from one survivor over its new communicator and trains to the end. It must end
// bitwise equal to the elastic reference: the same four ranks checkpointing at step K, and three
// ranks resuming from that checkpoint on disk; and every sample of every epoch is trained exactly
// once over the steps that count.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <barrier>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gloo_ranks.h"
#include "gradsync/spec/job_spec.h"
#include "gradsync/train/live_state.h"
#include "gradsync/train/train_loop.h"
#include "gtest/gtest.h"
#include "replica_test_util.h"

namespace gradsync::worker {
namespace {

constexpr int64_t kSamples = 250;  // ragged against the global batches of 4 ranks (16) and 3 (12)
constexpr int64_t kFailAfter = 9;  // the step after which a rank leaves: within the first epoch

// The mlp on TCP (a peer's closed socket is seen at once), with clipping and a cosine schedule, so
// that the optimizer's step count, the moments and the schedule's length all matter to the bits.
v1::Assignment LiveAssignment(const std::string& job, int generation, int rank, int world,
                              const std::vector<std::string>& overrides = {}) {
  std::vector<std::string> sets = {"ddp.transport=tcp", "training.gradClip=0.5", "training.warmupSteps=3"};
  sets.insert(sets.end(), overrides.begin(), overrides.end());
  absl::StatusOr<v1::JobSpec> spec = spec::Normalize(*spec::ParseJobSpec(
      absl::StrCat("model: {preset: mlp, device: cpu}\ndata: {synthetic: {numSamples: ", kSamples,
                   "}}\ntraining: {worldSize: 4, microBatch: 4, epochs: 2, seed: 11, logEvery: 100}"),
      "live-recovery-test.yaml", sets));
  EXPECT_TRUE(spec.ok()) << spec.status();
  v1::Assignment a;
  a.set_job_id(job);
  a.set_generation(generation);
  a.set_rank(rank);
  a.set_world_size(world);
  if (spec.ok()) *a.mutable_spec() = *spec;
  a.set_weights_path(absl::StrCat(::testing::TempDir(), "/", job, "-weights.bin"));
  a.mutable_placement()->set_device("cpu");
  a.mutable_placement()->set_backend("gloo");
  a.mutable_placement()->set_precision("fp32");
  return a;
}

// The samples of each step, over every rank, as the ranks began it: for the exact-once audit. A
// later generation's step supersedes an earlier one's of the same number (it was trained again).
struct SampleAudit {
  struct Step {
    int generation = 0;
    int epoch = 0;
    std::vector<int64_t> samples;
  };
  std::mutex mu;
  std::map<int64_t, Step> by_step;

  void Add(int generation, int64_t step, const ddp::Position& from, const ddp::StepShard& shard) {
    std::lock_guard<std::mutex> lock(mu);
    Step& s = by_step[step];
    if (s.generation != generation) s = Step{generation, from.epoch, {}};
    for (const auto& micro : shard.micro_indices) s.samples.insert(s.samples.end(), micro.begin(), micro.end());
  }
};

// What one rank of a generation ended with.
struct RankEnd {
  absl::Status status;
  std::optional<train::HeldState> held;
  std::string digest;
  int64_t steps = 0;
};

// How a generation of RunGeneration ends.
enum class End {
  kDone,             // every rank trains to the end
  kStopAtK,          // every rank stops after step kFailAfter (the reference's checkpoint)
  kLoseLastAtK,      // the last rank leaves after step kFailAfter; the others' next step fails
  kLoseOneInTransfer // rank 1 leaves once the ranks agreed on the layout, as the live state's transfer begins
};

// The generation's key-value namespace for one rank, which aborts that rank's communicator once
// the layout check's verdict is read: the rank is gone from there on, in the middle of its start.
class AbortAfterLayout final : public comm::KvClient {
 public:
  AbortAfterLayout(comm::KvClient* inner, comm::Communicator* comm) : inner_(inner), comm_(comm) {}
  absl::Status Set(const std::string& key, const std::string& value) override { return inner_->Set(key, value); }
  absl::StatusOr<std::string> Get(const std::string& key, absl::Duration timeout) override {
    absl::StatusOr<std::string> value = inner_->Get(key, timeout);
    if (key == "layout/verdict") comm_->Abort();
    return value;
  }
  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override {
    return inner_->Wait(keys, timeout);
  }
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override { return inner_->Add(key, delta); }

 private:
  comm::KvClient* inner_;
  comm::Communicator* comm_;
};

// One generation of `world` ranks in namespace `ns`, each rank's assignment from `assignment(rank)`.
// `held[r]` is what rank r brings (null: nothing). Losing a rank, every rank steps to kFailAfter,
// they meet, the last rank goes, and the others step on until a step fails, aborting the others as
// the coordinator would, and keep their state.
std::vector<RankEnd> RunGeneration(testing::CoordinatorServer& server, const std::string& ns, int world,
                                   const std::function<v1::Assignment(int)>& assignment,
                                   const std::vector<const train::HeldState*>& held, End how, SampleAudit* audit,
                                   std::function<void(const v1::ReportCheckpointRequest&)> on_checkpoint = {}) {
  // Gloo writes to its sockets without MSG_NOSIGNAL; a write to a peer that left must fail, not end
  // the process (the services ignore SIGPIPE too).
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<RankEnd> ends(world);
  const std::optional<int> leaver = how == End::kLoseLastAtK ? std::optional<int>(world - 1) : std::nullopt;
  // Every replica outlives the threads (a rank aborts the others' communicators), but for the one
  // that leaves, whose replica and sockets go as it leaves; each after its loop, before its kv.
  std::vector<std::unique_ptr<comm::KvClient>> kvs(world);
  std::vector<std::unique_ptr<train::Replica>> replicas(world);
  std::vector<comm::Communicator*> comms(world, nullptr);
  std::mutex comms_mu;
  const auto leave = [&](int rank) {
    std::lock_guard<std::mutex> lock(comms_mu);
    comms[rank] = nullptr;
    replicas[rank].reset();
  };
  std::barrier met(world);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      kvs[rank] = server.Kv(ns);
      comm::KvClient* kv = kvs[rank].get();
      const train::TrainConfig config = ConfigOf(assignment(rank));
      train::ReplicaOptions options;
      options.device.set_kind(v1::Device::CPU);
      options.kv = kv;
      auto created = train::CreateReplica(config, options);
      ASSERT_TRUE(created.ok()) << created.status();
      {
        std::lock_guard<std::mutex> lock(comms_mu);
        replicas[rank] = *std::move(created);
        comms[rank] = &replicas[rank]->comm();
      }
      train::Replica& replica = *replicas[rank];
      train::TrainHooks hooks;
      hooks.kv = kv;
      AbortAfterLayout leaving(kv, &replica.comm());
      if (how == End::kLoseOneInTransfer && rank == 1) hooks.kv = &leaving;
      hooks.epoch_seed = [&](int epoch) -> absl::StatusOr<uint64_t> { return ddp::EpochSeed(config.seed, epoch); };
      hooks.held = held[rank];
      hooks.on_samples = [audit, &config](int64_t step, const ddp::Position& from, const ddp::StepShard& shard) {
        audit->Add(config.generation, step, from, shard);
      };
      if (on_checkpoint) hooks.on_checkpoint = on_checkpoint;
      RankEnd& end = ends[rank];
      auto loop = train::TrainLoop::Start(config, replica, hooks);
      if (!loop.ok()) {
        end.status = loop.status();
        if (how == End::kStopAtK || how == End::kLoseLastAtK) met.arrive_and_drop();
        if (hooks.kv == &leaving) leave(rank);
        return;
      }
      if (how == End::kLoseOneInTransfer) ADD_FAILURE() << "rank " << rank << " started without its peer";
      for (int64_t s = 0; (how == End::kStopAtK || how == End::kLoseLastAtK) && s < kFailAfter; ++s) {
        ASSERT_TRUE((*loop)->Step().ok());
      }
      if (how == End::kStopAtK) return;
      if (leaver.has_value()) {
        met.arrive_and_wait();
        if (rank == *leaver) {
          loop->reset();
          leave(rank);
          return;
        }
      }
      while (!(*loop)->done()) {
        end.status = (*loop)->Step();
        if (end.status.ok()) continue;
        {
          std::lock_guard<std::mutex> lock(comms_mu);
          for (int r = 0; r < world; ++r) {
            if (r != leaver && comms[r] != nullptr) comms[r]->Abort();
          }
        }
        absl::StatusOr<train::HeldState> kept = (*loop)->Hold();
        ASSERT_TRUE(kept.ok()) << kept.status();
        end.held = *std::move(kept);
        return;
      }
      auto outcome = (*loop)->Finish();
      ASSERT_TRUE(outcome.ok()) << outcome.status();
      end.digest = outcome->param_digest;
      end.steps = outcome->result.global_step();
    });
  }
  for (std::thread& t : threads) t.join();
  return ends;
}

// Every sample of each epoch trained exactly once by the audited steps.
void ExpectEverySampleOncePerEpoch(const SampleAudit& audit) {
  std::map<int, std::multiset<int64_t>> seen;
  for (const auto& [step, trained] : audit.by_step) {
    for (int64_t i : trained.samples) {
      if (i != ddp::kPadSample) seen[trained.epoch].insert(i);
    }
  }
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& [epoch, samples] : seen) {
    EXPECT_EQ(static_cast<int64_t>(samples.size()), kSamples) << "epoch " << epoch;
    for (int64_t i = 0; i < kSamples; ++i) EXPECT_EQ(samples.count(i), 1u) << "sample " << i << " of epoch " << epoch;
  }
}

// The elastic reference: four ranks checkpoint at kFailAfter, three resume from it on disk.
std::string ElasticReference(testing::CoordinatorServer& server) {
  // Each test's own: CTest runs the cases of one binary side by side.
  const std::string job = absl::StrCat("live-reference-", ::getpid());
  const std::string root = absl::StrCat(::testing::TempDir(), "/", job, "-checkpoints");
  std::filesystem::remove_all(root);
  std::mutex mu;
  v1::CheckpointManifest m;
  const auto first = [&](int rank) {
    v1::Assignment a = LiveAssignment(job, 1, rank, 4, {absl::StrCat("checkpoint.everySteps=", kFailAfter)});
    a.set_checkpoint_root(root);
    return a;
  };
  SampleAudit unused;
  const std::vector<const train::HeldState*> none(4, nullptr);
  RunGeneration(server, "reference-1", 4, first, none, End::kStopAtK, &unused,
                [&](const v1::ReportCheckpointRequest& r) {
                  std::lock_guard<std::mutex> lock(mu);
                  m.set_dir(r.dir());
                  m.set_step(r.step());
                  m.set_epoch(r.epoch());
                  m.set_cursor(r.cursor());
                  m.set_initial_loss(r.initial_loss());
                  m.set_world_size(4);
                  *m.add_parts() = r.part();
                });
  EXPECT_EQ(m.step(), kFailAfter);
  std::vector<v1::CheckpointPart> parts(m.parts().begin(), m.parts().end());
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.rank() < b.rank(); });
  m.clear_parts();
  for (const auto& p : parts) *m.add_parts() = p;
  const auto second = [&](int rank) {
    v1::Assignment a = LiveAssignment(job, 2, rank, 3);
    *a.mutable_resume_from() = m;
    return a;
  };
  const std::vector<RankEnd> ends = RunGeneration(server, "reference-2", 3, second,
                                                  std::vector<const train::HeldState*>(3, nullptr), End::kDone, &unused);
  for (const RankEnd& e : ends) EXPECT_EQ(e.digest, ends[0].digest);
  std::filesystem::remove_all(root);
  return ends[0].digest;
}

TEST(LiveRecovery, ASurvivorsStateTrainsOnBitwiseEqualToTheElasticRestartFromACheckpoint) {
  testing::CoordinatorServer server;
  const std::string expected = ElasticReference(server);
  ASSERT_FALSE(expected.empty());

  for (const bool with_joiner : {false, true}) {
    SCOPED_TRACE(with_joiner ? "two survivors and a joining rank" : "three survivors");
    const std::string job = with_joiner ? "live-joiner" : "live-survivors";
    SampleAudit audit;
    const std::vector<RankEnd> failed =
        RunGeneration(server, job + "-1", 4, [&](int r) { return LiveAssignment(job, 1, r, 4); },
                      std::vector<const train::HeldState*>(4, nullptr), End::kLoseLastAtK, &audit);
    for (int r = 0; r < 3; ++r) {
      EXPECT_FALSE(failed[r].status.ok()) << "rank " << r << "'s step after the loss must fail";
      ASSERT_TRUE(failed[r].held.has_value()) << "rank " << r;
      EXPECT_EQ(failed[r].held->at.step, kFailAfter) << "a failed step commits nothing";
      EXPECT_EQ(failed[r].held->state.params, failed[0].held->state.params);
    }
    // Generation 2: old ranks 0, 1, 2; or 0 and 2 with a fresh rank between them, the state coming
    // from old rank 2 (new rank 2) then.
    std::vector<const train::HeldState*> held = {&*failed[0].held, &*failed[1].held, &*failed[2].held};
    int source = 1;
    if (with_joiner) {
      held[1] = nullptr;
      source = 2;
    }
    const auto second = [&](int rank) {
      v1::Assignment a = LiveAssignment(job, 2, rank, 3);
      a.mutable_live_from()->set_source_rank(source);
      a.mutable_live_from()->set_step(kFailAfter);
      return a;
    };
    const std::vector<RankEnd> ends = RunGeneration(server, job + "-2", 3, second, held, End::kDone, &audit);
    for (int r = 0; r < 3; ++r) {
      ASSERT_TRUE(ends[r].status.ok()) << ends[r].status;
      EXPECT_EQ(ends[r].digest, expected) << "rank " << r << " differs from the elastic restart from disk";
    }
    EXPECT_EQ(audit.by_step.at(kFailAfter + 1).generation, 2) << "the failed step was trained again";
    EXPECT_EQ(audit.by_step.begin()->first, 1);
    EXPECT_EQ(audit.by_step.rbegin()->first, ends[0].steps);
    EXPECT_EQ(static_cast<int64_t>(audit.by_step.size()), ends[0].steps) << "every step once";
    ExpectEverySampleOncePerEpoch(audit);
  }
}

TEST(LiveRecovery, ARankLostInTheTransferFailsTheGenerationAndTheNextRecoversFromTheSameStates) {
  testing::CoordinatorServer server;
  const std::string expected = ElasticReference(server);
  SampleAudit audit;
  const std::string job = "live-transfer";
  const std::vector<RankEnd> failed =
      RunGeneration(server, job + "-1", 4, [&](int r) { return LiveAssignment(job, 1, r, 4); },
                    std::vector<const train::HeldState*>(4, nullptr), End::kLoseLastAtK, &audit);
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(failed[r].held.has_value()) << "rank " << r;
  const std::vector<const train::HeldState*> held = {&*failed[0].held, &*failed[1].held, &*failed[2].held};
  const auto from = [&](int generation) {
    return [&, generation](int rank) {
      v1::Assignment a = LiveAssignment(job, generation, rank, 3);
      a.mutable_live_from()->set_source_rank(0);
      a.mutable_live_from()->set_step(kFailAfter);
      return a;
    };
  };
  // Generation 2: two survivors and a spare that leaves as the state is sent to it. Every rank's
  // start fails; none hangs.
  const std::vector<RankEnd> lost = RunGeneration(server, job + "-2", 3, from(2), {held[0], nullptr, held[2]},
                                                  End::kLoseOneInTransfer, &audit);
  for (int r = 0; r < 3; ++r) EXPECT_FALSE(lost[r].status.ok()) << "rank " << r;
  // Generation 3: the three survivors, with the states they held before it.
  const std::vector<RankEnd> ends = RunGeneration(server, job + "-3", 3, from(3), held, End::kDone, &audit);
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(ends[r].status.ok()) << ends[r].status;
    EXPECT_EQ(ends[r].digest, expected) << "rank " << r;
  }
  ExpectEverySampleOncePerEpoch(audit);
}

TEST(LiveRecovery, ASourceThatHoldsNothingFailsEveryRankAsUnavailable) {
  testing::CoordinatorServer server;
  SampleAudit audit;
  const auto assignment = [](int rank) {
    v1::Assignment a = LiveAssignment("live-nothing", 2, rank, 2);
    a.mutable_live_from()->set_source_rank(1);
    a.mutable_live_from()->set_step(5);
    return a;
  };
  const std::vector<RankEnd> ends =
      RunGeneration(server, "live-nothing", 2, assignment, {nullptr, nullptr}, End::kDone, &audit);
  for (const RankEnd& e : ends) {
    EXPECT_TRUE(absl::IsUnavailable(e.status)) << e.status;
    EXPECT_NE(e.status.message().find("rank 1 holds no state of job live-nothing at step 5"), std::string::npos)
        << e.status;
  }
}

TEST(LiveRecovery, ShardedStateAndRankLocalParametersAreNotHeld) {
  testing::CoordinatorServer server;
  for (const std::string& set : {std::string("ddp.sharding=optimizer"), std::string("ddp.ignoreParams=[\"layers.0.bias\"]")}) {
    train::TrainConfig config = ConfigOf(LiveAssignment("live-refused", 1, 0, 1, {set}));
    config.world_size = 1;
    auto kv = server.Kv("live-refused-" + set);
    train::ReplicaOptions options;
    options.device.set_kind(v1::Device::CPU);
    options.kv = kv.get();
    auto replica = train::CreateReplica(config, options);
    ASSERT_TRUE(replica.ok()) << replica.status();
    const absl::Status s = train::CanHoldLive(config, **replica);
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << set << ": " << s;
    EXPECT_NE(s.message().find(set.substr(0, set.find('='))), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace gradsync::worker

// Live recovery: the training state a rank keeps in memory when its generation fails, and its
// transfer to every rank of the next generation over the new communicator, instead of a read of
// the last checkpoint from disk (training.recovery "live").
//
// Why the held state is a committed step. A step changes the parameters and the optimizer state
// only in Replica::Step, after every gradient bucket and the per-step agreement were all-reduced;
// with ddp.sharding "none" that call runs no collective, so nothing between the last collective of
// a step and its position's advance can fail. A rank whose step failed anywhere before holds the
// state of the step before it; a rank that failed after (writing a checkpoint, evaluating) holds
// the state of the step it finished. Ranks of one failed generation may so differ by one step:
// the one that finished it holds every rank's gradients of that step, since its all-reduces
// completed, so the furthest held state is a state every rank's data contributed to, and the
// next generation resumes from it. Its data position is a sample count, like a checkpoint's, so
// the step that failed is retrained from the same sample at any world size: each sample of the
// epoch is still trained exactly once.
//
// What it costs: nothing on a healthy step (the state is copied only when a generation fails);
// at a recovery, one all-reduce of seven doubles and a broadcast of the parameters and both AdamW
// moments, 3 x 4 bytes a parameter, from the source to every other rank.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/train/replica.h"
#include "gradsync/train/train_checkpoint.h"

namespace gradsync::train {

// What a rank keeps of a failed generation: the whole state and where training stood.
struct HeldState {
  std::string job_id;
  // The generation that trained it.
  int generation = 0;
  TrainPosition at;
  // The parameters and both AdamW moments, whole (shard_begin 0), with the optimizer's step count.
  ckpt::RankState state;
};

// Whether `replica` of a generation configured by `config` can hold its state for a live
// recovery and receive one: OK, or FAILED_PRECONDITION saying why not (sharded state, of which the
// lost rank's shard is gone with it; rank-local parameters, which are each rank's own; a GPU
// replica, whose communicator takes device memory).
absl::Status CanHoldLive(const TrainConfig& config, const Replica& replica);

// A host copy of `replica`'s whole state at `at`: what the worker keeps when its generation fails.
// CanHoldLive's errors, and the replica's.
absl::StatusOr<HeldState> HoldState(const TrainConfig& config, Replica& replica, const TrainPosition& at);

// Every rank of the generation calls it, in place of restoring a checkpoint: `source`'s rank sends
// the state it holds (`held`, which the other ranks leave null), every rank loads it, and the
// position comes back. A collective. UNAVAILABLE on every rank when the source holds no state at
// source.step (the coordinator's view was stale; a restart resolves it), FAILED_PRECONDITION when
// the state does not fit this model, CanHoldLive's errors, and the communicator's.
absl::StatusOr<TrainPosition> ReceiveLiveState(const TrainConfig& config, const LiveSource& source,
                                               const HeldState* held, Replica& replica);

}  // namespace gradsync::train

// Data sharding across ranks with nothing to remember: like PyTorch's DistributedSampler, but
// every epoch's order is a pure function of (seed, epoch), and a position in the epoch is one
// number (the global sample cursor). Any rank, after any restart and at any world size, computes
// the same samples for the same cursor.
//
// One optimizer step consumes a global batch of G = world_size x micro_batch x grad_accum
// positions of the epoch's permutation. Micro-step k of the step covers the next
// world_size x micro_batch positions, and rank r takes the r-th run of micro_batch of them.
// When fewer than G positions remain at the end of an epoch, the policy decides: kPartial trains
// on what remains (later ranks may get fewer samples, or none), kDrop skips to the next epoch,
// kPad fills every rank's micro-batches up to full size with kPadSample slots, which the dataset
// turns into masked samples (no loss, no gradient): every rank does the same work, with the same
// shapes, and no sample is repeated.
#pragma once

#include <cstdint>
#include <vector>

#include "gradsync/ddp/epoch_order.h"
#include "gradsync/spec/choices.h"

namespace gradsync::ddp {

// The spec's data.lastBatch, read once where the spec enters the process.
using LastBatch = spec::LastBatch;

// The index of a padding slot under LastBatch::kPad.
inline constexpr int64_t kPadSample = -1;

struct ShardConfig {
  int64_t num_samples = 0;
  int world_size = 1;
  int micro_batch = 1;
  int grad_accum_steps = 1;
  LastBatch last_batch = LastBatch::kPartial;

  int64_t global_batch() const { return static_cast<int64_t>(world_size) * micro_batch * grad_accum_steps; }
  // Optimizer steps in one epoch under the last-batch policy.
  int64_t steps_per_epoch() const;
};

// The samples of one optimizer step for one rank.
struct StepShard {
  // indices[k] are this rank's sample indices for micro-step k (possibly empty; under kPad always
  // micro_batch long, with kPadSample past the end of the epoch).
  std::vector<std::vector<int64_t>> micro_indices;
  // Real samples in the whole global step, over all ranks and micro-steps (padding excluded): the
  // divisor of the mean loss, so that gradients summed across ranks are the mean over the batch.
  int64_t global_count = 0;
};

// The shard of `rank` for the step that starts at position `cursor` of the epoch's `order`.
StepShard ShardForStep(const ShardConfig& config, const EpochOrder& order, int64_t cursor, int rank);

// Where a step counter lands: epoch and the cursor within it.
struct Position {
  int epoch = 0;
  int64_t cursor = 0;
};
Position PositionOfStep(const ShardConfig& config, int64_t step);

// Total optimizer steps: max_steps when set (> 0), else epochs x steps_per_epoch; when both are
// set, whichever ends first.
int64_t TotalSteps(const ShardConfig& config, int64_t max_steps, int epochs);

// The position after a step that started at `pos`: the cursor moves past the step's samples, and
// the epoch ends when no (full, under kDrop) global batch remains. Positions are sample counts,
// so a run resumed with another world size continues at the exact next sample.
Position Advance(const ShardConfig& config, Position pos);

// Steps still to run from `pos` with `steps_done` done, under the max_steps / epochs limits.
int64_t StepsRemaining(const ShardConfig& config, Position pos, int64_t steps_done, int64_t max_steps, int epochs);

}  // namespace gradsync::ddp

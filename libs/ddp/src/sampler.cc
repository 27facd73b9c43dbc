#include "gradsync/ddp/sampler.h"

#include <algorithm>
#include <numeric>

#include "gradsync/core/rng.h"

namespace gradsync::ddp {

int64_t ShardConfig::steps_per_epoch() const {
  const int64_t g = global_batch();
  if (g <= 0 || num_samples <= 0) return 0;
  return last_batch == LastBatch::kDrop ? num_samples / g : (num_samples + g - 1) / g;
}

StepShard ShardForStep(const ShardConfig& config, const EpochOrder& order, int64_t cursor, int rank) {
  const int64_t n = order.size();
  const int64_t end = std::min(n, cursor + config.global_batch());
  const int64_t per_micro = static_cast<int64_t>(config.world_size) * config.micro_batch;
  StepShard shard;
  shard.global_count = std::max<int64_t>(0, end - cursor);
  shard.micro_indices.resize(config.grad_accum_steps);
  for (int k = 0; k < config.grad_accum_steps; ++k) {
    const int64_t begin = cursor + k * per_micro + static_cast<int64_t>(rank) * config.micro_batch;
    const int64_t stop = std::min(end, begin + config.micro_batch);
    for (int64_t p = begin; p < stop; ++p) shard.micro_indices[k].push_back(order[p]);
    if (config.last_batch == LastBatch::kPad) shard.micro_indices[k].resize(config.micro_batch, kPadSample);
  }
  return shard;
}

Position PositionOfStep(const ShardConfig& config, int64_t step) {
  const int64_t per_epoch = config.steps_per_epoch();
  if (per_epoch <= 0) return {};
  return Position{static_cast<int>(step / per_epoch), (step % per_epoch) * config.global_batch()};
}

int64_t TotalSteps(const ShardConfig& config, int64_t max_steps, int epochs) {
  const int64_t by_epochs = epochs > 0 ? epochs * config.steps_per_epoch() : 0;
  if (max_steps > 0 && by_epochs > 0) return std::min(max_steps, by_epochs);
  return max_steps > 0 ? max_steps : by_epochs;
}

Position Advance(const ShardConfig& config, Position pos) {
  const int64_t g = config.global_batch();
  pos.cursor = std::min(config.num_samples, pos.cursor + g);
  const int64_t left = config.num_samples - pos.cursor;
  if (left <= 0 || (config.last_batch == LastBatch::kDrop && left < g)) {
    ++pos.epoch;
    pos.cursor = 0;
  }
  return pos;
}

int64_t StepsRemaining(const ShardConfig& config, Position pos, int64_t steps_done, int64_t max_steps, int epochs) {
  const int64_t g = config.global_batch();
  int64_t by_epochs = -1;
  if (epochs > 0) {
    const int64_t left = config.num_samples - pos.cursor;
    const int64_t this_epoch = config.last_batch == LastBatch::kDrop ? left / g : (left + g - 1) / g;
    by_epochs = pos.epoch >= epochs ? 0 : this_epoch + (epochs - pos.epoch - 1) * config.steps_per_epoch();
  }
  const int64_t by_steps = max_steps > 0 ? std::max<int64_t>(0, max_steps - steps_done) : -1;
  if (by_epochs >= 0 && by_steps >= 0) return std::min(by_epochs, by_steps);
  return std::max(by_epochs, by_steps);
}

}  // namespace gradsync::ddp

#include "gradsync/ddp/shard_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gradsync/comm/communicator.h"

namespace gradsync::ddp {

ShardPlan::ShardPlan(spec::Sharding mode, int64_t numel, int rank, int world_size)
    : mode_(mode), rank_(rank), bounds_(comm::EvenBounds(numel, world_size)) {}

std::string ShardPlan::DescribeSuffix() const {
  return optimizer_sharded() ? absl::StrCat(", sharding ", spec::Name(mode_)) : std::string();
}

StateBytes RankStateBytes(spec::Sharding mode, int64_t numel, int64_t largest_unit, int world_size) {
  constexpr int64_t kFloat = sizeof(float);
  const ShardPlan plan(mode, numel, 0, std::max(world_size, 1));
  const int64_t shard = plan.shard_size();
  const int64_t unit = std::min(largest_unit, numel);
  StateBytes b;
  b.params = kFloat * (plan.params_sharded() ? std::min(numel, shard + 2 * unit) : numel);
  b.grads = kFloat * (plan.grads_sharded() ? std::min(numel, shard + unit) : numel);
  b.optimizer = 2 * kFloat * plan.optimizer_range().second - 2 * kFloat * plan.optimizer_range().first;
  return b;
}

}  // namespace gradsync::ddp

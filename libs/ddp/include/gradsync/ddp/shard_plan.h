// How a generation divides the training state among its ranks (ddp.sharding), decided once per
// generation and read by the replicas, the reducer and the coordinator's budget alike:
//
//   mode        AdamW's moments   reduced gradients   parameters
//   none        whole             whole               whole
//   optimizer   shard (ZeRO-1)    whole               whole
//   gradients   shard             shard (ZeRO-2)      whole
//   full        shard             shard               shard (ZeRO-3, FSDP FULL_SHARD)
//
// Rank r's shard is the flat elements [bounds[r], bounds[r + 1]) (comm::EvenBounds): the same
// split for every state, so the optimizer steps exactly the gradients its rank owns.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gradsync/spec/choices.h"

namespace gradsync::ddp {

class ShardPlan {
 public:
  // `numel` flat fp32 elements over `world_size` ranks, seen from `rank`.
  ShardPlan(spec::Sharding mode, int64_t numel, int rank, int world_size);

  spec::Sharding mode() const { return mode_; }
  bool optimizer_sharded() const { return mode_ != spec::Sharding::kNone; }
  bool grads_sharded() const { return mode_ == spec::Sharding::kGradients || params_sharded(); }
  bool params_sharded() const { return mode_ == spec::Sharding::kFull; }

  int rank() const { return rank_; }
  int world_size() const { return static_cast<int>(bounds_.size()) - 1; }
  int64_t numel() const { return bounds_.back(); }
  // The world_size + 1 bounds of the ranks' shards, also with sharding off (the clipping norm is
  // summed shard by shard in every mode, so that its bits do not depend on the mode).
  const std::vector<int64_t>& bounds() const { return bounds_; }
  int64_t shard_begin() const { return bounds_[rank_]; }
  int64_t shard_end() const { return bounds_[rank_ + 1]; }
  int64_t shard_size() const { return shard_end() - shard_begin(); }
  // The elements this rank's optimizer steps: its shard when the optimizer is sharded, all of them
  // otherwise.
  std::pair<int64_t, int64_t> optimizer_range() const {
    return optimizer_sharded() ? std::pair{shard_begin(), shard_end()} : std::pair<int64_t, int64_t>{0, numel()};
  }
  // The reducer's shard_bounds: bounds() when the reduced gradients are sharded, none otherwise.
  std::vector<int64_t> reducer_bounds() const { return grads_sharded() ? bounds_ : std::vector<int64_t>{}; }
  // ", sharding optimizer" (the mode's spec name), or nothing unsharded: for a replica's Describe.
  std::string DescribeSuffix() const;

 private:
  spec::Sharding mode_;
  int rank_;
  std::vector<int64_t> bounds_;
};

// The fp32 bytes one rank holds for the training state of a model of `numel` parameters, sharded
// by `mode` over `world_size` ranks (the largest shard, the first rank's). A sharded state counts
// its shard; with "gradients" and "full" also the gradients of the model's largest gate unit
// (`largest_unit` elements), which a backward writes whole before the reducer scatters them; with
// "full" also the parameters of two such units, the one a pass holds and the one it fetches.
// Activations, which grow with the batch, are not counted.
struct StateBytes {
  int64_t params = 0;
  int64_t grads = 0;
  int64_t optimizer = 0;  // AdamW's two moments
  int64_t total() const { return params + grads + optimizer; }
};
StateBytes RankStateBytes(spec::Sharding mode, int64_t numel, int64_t largest_unit, int world_size);

}  // namespace gradsync::ddp

// The parameter gate of fully sharded data parallel (ddp.sharding "full"; see
// gradsync/nn/param_gate.h): rank r owns elements [bounds[r], bounds[r + 1]) of the model's flat
// parameters and keeps only those. Acquiring a unit all-gathers its parameters from their owners
// (Communicator::AllGatherBlocks over the unit's element range, each rank giving its part of it,
// after nn::Model::CommitParams maps a device model's range back), then starts gathering the next
// unit while the model computes; releasing a unit gives its memory outside this rank's shard back
// (nn::Model::DiscardParams).
//
// What is whole is tracked per parameter and changes only through Acquire and Release, which
// every rank calls in the same order, so every rank issues the same gathers in the same order.
// Two units may share a parameter (a transformer's embeddings and head share the tied token
// embedding); it stays whole while either holds it or it is being fetched for the next unit.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/nn/model.h"
#include "gradsync/nn/param_gate.h"

namespace gradsync::ddp {

class ParamGather final : public nn::ParamGate {
 public:
  // `bounds`: the world size + 1 bounds of the ranks' shards (comm::EvenBounds of the total).
  // `model` and `comm` must outlive the gate.
  ParamGather(nn::Model* model, comm::Communicator* comm, std::vector<int64_t> bounds);
  // Waits for gathers still in flight: their buffers are the model's.
  ~ParamGather() override;

  absl::Status Acquire(const nn::ParamUnit& unit, const nn::ParamUnit* next) override;
  void Release(const nn::ParamUnit& unit) override;

  // Fills the model's parameters from `seed` one at a time (nn::Model::InitParamRange), giving
  // back after each what lies outside this rank's shard: the rank never holds the whole model.
  void InitParams(uint64_t seed);

  // Gives back the elements of parameters [first, last) outside this rank's shard, once they were
  // set whole (initialised one at a time, or gathered whole for the weights file). None of them
  // may be held.
  void DiscardUnowned(int first, int last);

  // The most parameter elements outside this rank's shard held whole at once so far: the one or
  // two units a pass holds and fetches.
  int64_t peak_gathered() const { return peak_gathered_; }

 private:
  struct Param {
    int holders = 0;      // units holding it now
    bool wanted = false;  // fetched for the next unit
    bool whole = false;   // whole on every rank (or being gathered: `fetch` is set)
    std::shared_ptr<comm::Work> fetch;
  };

  // Starts gathering the parameters of `unit` that are not whole, one collective per run of
  // adjacent parameters.
  void Fetch(const nn::ParamUnit& unit);
  void Gather(int first, int last);
  // Elements of parameter p outside this rank's shard.
  int64_t Unowned(int p) const;
  // Gives back what parameters [first, last) hold outside this rank's shard; none is whole after.
  void Discard(int first, int last);

  nn::Model* model_;
  comm::Communicator* comm_;
  const std::vector<int64_t> bounds_;
  const int64_t own_begin_, own_end_;
  std::vector<Param> params_;
  int64_t gathered_ = 0;
  int64_t peak_gathered_ = 0;
};

}  // namespace gradsync::ddp

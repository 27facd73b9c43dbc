// How a model reaches parameters that live sharded across ranks (ddp.sharding "full": ZeRO stage
// 3, FSDP's FULL_SHARD). Each rank keeps only its shard of params(); the model brackets every use
// of a group of parameters (a unit: a layer, the embeddings) with Acquire and Release, and the
// gate gathers the unit's parameters from their owners before it computes and drops them after.
//
// Units are used in a fixed order that the model knows, the same on every rank (the gate's
// collectives must be issued in one order everywhere), so each Acquire names the next unit too and
// the gate fetches it while the current one computes. A model without a gate has its whole
// params() and skips all of this.
#pragma once

#include <vector>

#include "absl/status/status.h"

namespace gradsync::nn {

// Layout indices [first, last).
struct ParamRange {
  int first = 0;
  int last = 0;
};
// The parameters one step of a model's pass uses together, e.g. {[0, 2)} for an MLP's first
// layer, or the final norm with the tied token embedding for a transformer's head.
using ParamUnit = std::vector<ParamRange>;

class ParamGate {
 public:
  virtual ~ParamGate() = default;
  // Makes every parameter of `unit` whole in params() and holds it until Release(unit); then
  // starts fetching `next` (null: none) so that the following Acquire finds it ready. The
  // collective's error if gathering failed.
  virtual absl::Status Acquire(const ParamUnit& unit, const ParamUnit* next) = 0;
  // The model is done with `unit`'s parameters for now.
  virtual void Release(const ParamUnit& unit) = 0;
};

// A model's units and the orders its passes acquire them in: a forward pass walks every unit in
// turn; a training pass then walks units [back_first, back_last) again in reverse (a unit that
// follows itself at the turn is held once). Not copyable: the orders point into the units.
class PassOrders {
 public:
  PassOrders(std::vector<ParamUnit> units, int back_first, int back_last);
  PassOrders(const PassOrders&) = delete;
  PassOrders& operator=(const PassOrders&) = delete;

  const ParamUnit& unit(int i) const { return units_[i]; }
  const std::vector<const ParamUnit*>* forward() const { return &forward_; }
  const std::vector<const ParamUnit*>* train() const { return &train_; }

 private:
  const std::vector<ParamUnit> units_;
  std::vector<const ParamUnit*> forward_, train_;
};

// One pass's walk through its units (forward, or forward and backward), holding one at a time:
// Next() releases the unit held and acquires the next in `order`, naming the one after it. A unit
// that follows itself is kept. Without a gate every call is a no-op.
class GatedPass {
 public:
  GatedPass(ParamGate* gate, const std::vector<const ParamUnit*>* order) : gate_(gate), order_(order) {}
  ~GatedPass() { Finish(); }
  GatedPass(const GatedPass&) = delete;
  GatedPass& operator=(const GatedPass&) = delete;

  absl::Status Next();
  // Releases the unit held.
  void Finish();
  // Walks the rest of the order without computing: a rank with an empty batch still takes part
  // in every gather the others make.
  absl::Status Drain();

 private:
  ParamGate* gate_;
  const std::vector<const ParamUnit*>* order_;
  size_t at_ = 0;  // units acquired so far
  const ParamUnit* held_ = nullptr;
};

}  // namespace gradsync::nn

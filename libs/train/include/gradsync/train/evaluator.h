// The validation loss of a generation: every rank evaluates its share of the validation set
// (data/validation_set.h) and one all-reduce of (loss sum, target count) in double gives every
// rank the exact mean over the whole set.
//
// What evaluating leaves alone, so that training is bitwise the same with it on or off:
//   - the gradients and the optimizer state: only Model::Evaluate runs (forward, no backward), and
//     the reducer never hears of it;
//   - the training data cursor and the epoch's order: the validation set is separate, and the
//     windows are read in a fixed order (ddp/eval_partition.h), no randomness drawn;
//   - dropout: the models have none, and Evaluate is their inference path.
// The activations a forward pass leaves in the model's buffers are overwritten by the next
// training step before it reads them.
//
// Cost: windows / world_size forward passes of microBatch windows per rank, then one all-reduce
// of two doubles.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/data/validation_set.h"
#include "gradsync/ddp/eval_partition.h"
#include "gradsync/nn/model.h"
#include "gradsync/train/train_config.h"

namespace gradsync::train {

// A validation loss and the step after which it was computed.
struct Evaluation {
  int64_t step = 0;
  double loss = 0;
};

class Evaluator {
 public:
  // The validation set of config.plan.data (CreateValidationSet's errors) and config.rank's share of it
  // among `world_size` ranks, in batches of config.sampler.micro_batch windows; an evaluator that
  // never evaluates when the job has none.
  static absl::StatusOr<std::unique_ptr<Evaluator>> Create(const TrainConfig& config, int world_size);

  bool enabled() const { return set_ != nullptr; }
  // Whether the ranks evaluate after `step` steps: every config.eval_every steps (when above 0)
  // and after the last step (`last`).
  bool Due(int64_t step, bool last) const;
  // Evaluates `model` on this rank's share and all-reduces the sums over `comm`; every rank of the
  // generation must call it after the same step. INTERNAL when the loss is not finite; the model's
  // and the communicator's errors.
  absl::StatusOr<Evaluation> Evaluate(int64_t step, nn::Model& model, comm::Communicator& comm);
  // The newest evaluation; empty before the first.
  const std::optional<Evaluation>& last() const { return last_; }
  const data::ValidationSet* set() const { return set_.get(); }

 private:
  std::unique_ptr<data::ValidationSet> set_;
  ddp::EvalShard shard_;
  // The most batches any rank has (each evaluates that many, some empty).
  int64_t max_batches_ = 0;
  int64_t every_ = 0;
  nn::Batch batch_;
  std::optional<Evaluation> last_;
};

}  // namespace gradsync::train

#include "gradsync/train/evaluator.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "absl/strings/str_format.h"

namespace gradsync::train {

absl::StatusOr<std::unique_ptr<Evaluator>> Evaluator::Create(const TrainConfig& config, int world_size) {
  auto evaluator = std::make_unique<Evaluator>();
  absl::StatusOr<std::unique_ptr<data::ValidationSet>> set = data::CreateValidationSet(config.plan.data);
  if (!set.ok()) return set.status();
  evaluator->set_ = *std::move(set);
  evaluator->every_ = config.eval_every;
  if (evaluator->enabled()) {
    const int64_t batch = std::max(1, config.sampler.micro_batch);
    evaluator->shard_ = ddp::EvalShardFor(evaluator->set_->windows(), batch, world_size, config.rank);
    evaluator->max_batches_ = ddp::MostBatchesPerRank(evaluator->set_->windows(), batch, world_size);
  }
  return evaluator;
}

bool Evaluator::Due(int64_t step, bool last) const { return enabled() && (last || (every_ > 0 && step % every_ == 0)); }

absl::StatusOr<Evaluation> Evaluator::Evaluate(int64_t step, nn::Model& model, comm::Communicator& comm) {
  // Each batch's sum comes from the model in double; the batches are the same at every world size.
  std::vector<double> sums = {0.0, 0.0};
  // Every rank evaluates as many batches as the one with the most, the extra ones empty: a model
  // whose parameters live sharded gathers them in each, from every rank.
  for (int64_t k = 0; k < max_batches_; ++k) {
    const int64_t first = std::min(shard_.end, shard_.first + k * shard_.batch);
    if (absl::Status s = set_->Fill(first, std::min(shard_.batch, shard_.end - first), &batch_); !s.ok()) return s;
    absl::StatusOr<nn::LossSum> loss = model.Evaluate(batch_);
    if (!loss.ok()) return loss.status();
    sums[0] += loss->sum;
    sums[1] += static_cast<double>(loss->count);
  }
  if (absl::Status s = comm.AllReduceSum(std::span<double>(sums)); !s.ok()) return s;
  const double mean = sums[0] / std::max(1.0, sums[1]);
  if (!std::isfinite(mean)) {
    return absl::InternalError(absl::StrFormat("validation loss is %f after step %d", mean, step));
  }
  last_ = Evaluation{step, mean};
  return *last_;
}

}  // namespace gradsync::train

// TrainLoop's step: the shard, forward and backward with the reducer, the agreement across ranks,
// the optimizer, and the position after it.
#include <algorithm>
#include <cmath>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gradsync/kernels/cpu/softmax_xent.h"
#include "gradsync/train/train_loop.h"

namespace gradsync::train {

absl::Status TrainLoop::Step(GradSync sync) {
  if (done()) return absl::FailedPreconditionError(absl::StrCat("every one of the ", total_, " steps has run"));
  StepFigures f;
  f.step = at_.step;
  absl::StatusOr<ddp::StepShard> shard = BeginStep();
  if (!shard.ok()) return shard.status();
  // Before any collective of the step: a step completes on no rank before every rank began it, so
  // every completed step is in every rank's audit, also a lost rank's.
  if (hooks_.on_samples) hooks_.on_samples(at_.step + 1, at_.data, *shard);
  f.start = absl::Now();
  if (absl::Status s = ForwardBackward(*shard, sync, &f); !s.ok()) return s;
  if (absl::Status s = AgreeAcrossRanks(&f); !s.ok()) return s;
  f.lr = schedule_.At(f.step);
  absl::StatusOr<double> norm = replica_.Step(f.lr, config_.grad_clip);
  if (!norm.ok()) return norm.status();
  f.grad_norm = *norm;

  Advance(*shard, f);
  stopped_ = f.stop_voted;
  if (absl::Status s = CheckpointIfDue(f.checkpoint_voted); !s.ok()) return s;
  if (absl::Status s = EvaluateIfDue(&f); !s.ok()) return s;
  LogProgress(f);
  result_.set_global_step(at_.step);
  if (hooks_.on_reached) hooks_.on_reached(result_);
  ReportStep(f);
  return absl::OkStatus();
}

// The abort check, the epoch's permutation when a new epoch begins, and this rank's shard.
absl::StatusOr<ddp::StepShard> TrainLoop::BeginStep() {
  if (hooks_.abort != nullptr && hooks_.abort->load()) {
    return absl::AbortedError(absl::StrCat("aborted by the coordinator at step ", at_.step));
  }
  if (at_.data.epoch != epoch_) {
    auto seed = hooks_.epoch_seed(at_.data.epoch);
    if (!seed.ok()) return seed.status();
    order_ = ddp::EpochOrder(*seed, shard_.num_samples);
    epoch_ = at_.data.epoch;
  }
  ddp::StepShard mine = ddp::ShardForStep(shard_, order_, at_.data.cursor, config_.rank);
  if (hooks_.on_step_begin) {
    hooks_.on_step_begin(
        StepMarker{at_.step + 1, replica_.comm().sequence(), static_cast<int>(reducer_->buckets().size())});
  }
  return mine;
}

absl::StatusOr<float> TrainLoop::FillMaskedStep(const ddp::StepShard& shard) {
  masked_batches_.resize(shard.micro_indices.size());
  std::vector<double> counted = {0.0};
  for (size_t k = 0; k < shard.micro_indices.size(); ++k) {
    if (absl::Status s = dataset_->Fill(shard.micro_indices[k], &masked_batches_[k]); !s.ok()) return s;
    for (const int32_t t : masked_batches_[k].targets) counted[0] += t != kernels::cpu::kIgnoreIndex ? 1.0 : 0.0;
  }
  if (absl::Status s = replica_.comm().AllReduceSum(std::span<double>(counted)); !s.ok()) return s;
  return 1.0f / static_cast<float>(std::max(1.0, counted[0]));
}

absl::Status TrainLoop::ForwardBackward(const ddp::StepShard& shard, GradSync sync, StepFigures* f) {
  nn::Model& model = replica_.model();
  // The mean over every token of the global step, however the samples fall across ranks; with loss
  // masks, over the tokens they keep.
  float scale = 1.0f / static_cast<float>(shard.global_count * config_.tokens_per_sample);
  if (dataset_->masked()) {
    absl::StatusOr<float> masked = FillMaskedStep(shard);
    if (!masked.ok()) return masked.status();
    scale = *masked;
  }
  const nn::GradsReadyFn on_ready = [this](int first, int last) { reducer_->MarkReady(first, last); };
  replica_.ZeroGrads();
  for (size_t k = 0; k < shard.micro_indices.size(); ++k) {
    // Only the last micro-step communicates; earlier ones accumulate locally (no_sync).
    reducer_->BeginStep(sync == GradSync::kAllReduce && k + 1 == shard.micro_indices.size());
    if (dataset_->masked()) {
      std::swap(batch_, masked_batches_[k]);
    } else if (absl::Status s = dataset_->Fill(shard.micro_indices[k], &batch_); !s.ok()) {
      return s;
    }
    auto loss = model.ForwardBackward(batch_, scale, on_ready);
    if (!loss.ok()) return loss.status();
    f->loss_sum += loss->sum;
    f->tokens += loss->count;
    f->samples += static_cast<int64_t>(shard.micro_indices[k].size());
    if (absl::Status s = reducer_->FinishStep(); !s.ok()) return s;
    f->compute_seconds += reducer_->timeline().compute_seconds;
  }
  f->global_count = shard.global_count;
  return absl::OkStatus();
}

// One small all-reduce carries the loss, the token count, and whether any rank wants a checkpoint
// now or to stop, so every rank checkpoints, and stops, after the same step.
absl::Status TrainLoop::AgreeAcrossRanks(StepFigures* f) {
  const bool by_time = config_.rank == 0 && config_.checkpoint_every > absl::ZeroDuration() &&
                       absl::Now() - last_checkpoint_ >= config_.checkpoint_every;
  const bool asked = hooks_.checkpoint_requested != nullptr && hooks_.checkpoint_requested->load();
  const bool stop = hooks_.stop != nullptr && hooks_.stop->load();
  std::vector<double> reduced = {f->loss_sum, static_cast<double>(f->tokens), (by_time || asked) ? 1.0 : 0.0,
                                 stop ? 1.0 : 0.0};
  if (absl::Status s = replica_.comm().AllReduceSum(std::span<double>(reduced)); !s.ok()) return s;
  f->mean_loss = reduced[0] / std::max(1.0, reduced[1]);
  f->checkpoint_voted = reduced[2] > 0;
  f->stop_voted = reduced[3] > 0;
  if (!std::isfinite(f->mean_loss)) {
    return absl::InternalError(absl::StrFormat("loss is %f at step %d", f->mean_loss, f->step));
  }
  return absl::OkStatus();
}

// The result's running figures, the throughput counters, and the position after the step.
void TrainLoop::Advance(const ddp::StepShard& shard, const StepFigures& f) {
  if (f.step == 0) {
    result_.set_initial_loss(f.mean_loss);
    at_.initial_loss = f.mean_loss;
  }
  result_.set_final_loss(f.mean_loss);
  result_.set_samples_seen(result_.samples_seen() + shard.global_count);
  window_samples_ += shard.global_count;
  ++window_steps_;
  smoothed_loss_.Add(f.mean_loss);
  if (f.step + 1 == warm_steps_) steady_start_ = absl::Now();
  if (f.step + 1 > warm_steps_) steady_samples_ += shard.global_count;
  at_.step = f.step + 1;
  at_.data = ddp::Advance(shard_, at_.data);
}

}  // namespace gradsync::train

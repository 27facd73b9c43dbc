// What TrainLoop tells the world after a step: a checkpoint when due, rank 0's log line and
// progress, and every rank's step report (with its memory).
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gradsync/core/log.h"
#include "gradsync/train/train_loop.h"

namespace gradsync::train {
namespace {

void FillTimeline(const ddp::StepTimeline& t, v1::StepReport* r) {
  r->set_communication_seconds(t.communication_seconds);
  r->set_exposed_communication_seconds(t.exposed_seconds);
  for (size_t i = 0; i < t.buckets.size(); ++i) {
    v1::BucketTiming* b = r->add_buckets();
    b->set_index(static_cast<int>(i));
    b->set_bytes(t.buckets[i].bytes);
    b->set_ready_seconds(t.buckets[i].ready);
    b->set_started_seconds(t.buckets[i].started);
    b->set_done_seconds(t.buckets[i].done);
  }
}

}  // namespace

// Every checkpoint_every_steps steps, or when a rank voted for one (asked by the coordinator, or
// rank 0's checkpoint_every passed); and after the last step, once, so that a finished job can be
// continued from it. Without a checkpoint root (gradsync-bench ddp) none at the end.
absl::Status TrainLoop::CheckpointIfDue(bool voted) {
  const bool by_steps = config_.checkpoint_every_steps > 0 && at_.step % config_.checkpoint_every_steps == 0;
  const bool due = done() ? !config_.checkpoint_root.empty() : (by_steps || voted);
  if (!due) return absl::OkStatus();
  if (hooks_.checkpoint_requested != nullptr) hooks_.checkpoint_requested->store(false);
  last_checkpoint_ = absl::Now();
  absl::StatusOr<v1::ReportCheckpointRequest> report = WriteCheckpoint(config_, replica_, at_);
  if (!report.ok()) return report.status();
  if (hooks_.on_checkpoint) hooks_.on_checkpoint(*report);
  return absl::OkStatus();
}

// Rank 0, after the first step, every log_every steps and the last: the log line and the job's
// progress, with the throughput since the last time.
void TrainLoop::LogProgress(const StepFigures& f) {
  const bool due = at_.step % config_.log_every == 0 || done() || f.step == 0 || f.validation_loss.has_value();
  if (config_.rank != 0 || !due) return;
  const double secs = absl::ToDoubleSeconds(absl::Now() - window_start_);
  const double sps = secs > 0 ? static_cast<double>(window_samples_) / secs : 0.0;
  GS_LOG(INFO) << absl::StrFormat("step %d/%d | epoch %d | loss %.4f | lr %.2e | norm %.3f | %.0f samples/s%s",
                                  at_.step, total_, epoch_, f.mean_loss, f.lr, f.grad_norm, sps,
                                  f.validation_loss ? absl::StrFormat(" | val loss %.4f", *f.validation_loss) : "");
  if (hooks_.on_progress) {
    v1::JobProgress p;
    p.set_step(at_.step);
    p.set_total_steps(total_);
    p.set_epoch(epoch_);
    p.set_loss(f.mean_loss);
    p.set_samples_per_second(sps);
    p.set_tokens_per_second(sps * static_cast<double>(config_.tokens_per_sample));
    p.set_lr(f.lr);
    p.set_grad_norm(f.grad_norm);
    p.set_step_seconds(window_steps_ > 0 ? secs / static_cast<double>(window_steps_) : 0.0);
    p.set_smoothed_loss(smoothed_loss_.value());
    if (const std::optional<Evaluation>& e = evaluator_->last()) {
      p.set_validation_loss(e->loss);
      p.set_validation_step(e->step);
    }
    hooks_.on_progress(p);
  }
  window_start_ = absl::Now();
  window_samples_ = 0;
  window_steps_ = 0;
}

void TrainLoop::ReportStep(const StepFigures& f) {
  if (!hooks_.on_step) return;
  v1::StepReport report;
  report.set_rank(config_.rank);
  report.set_world_size(replica_.comm().size());
  report.set_step(at_.step);
  report.set_epoch(epoch_);
  report.set_loss(f.tokens > 0 ? f.loss_sum / static_cast<double>(f.tokens) : 0.0);
  report.set_samples(f.samples);
  report.set_tokens(f.samples * config_.tokens_per_sample);
  report.set_step_seconds(absl::ToDoubleSeconds(absl::Now() - f.start));
  report.set_compute_seconds(f.compute_seconds);
  report.set_grad_norm(f.grad_norm);
  report.set_learning_rate(f.lr);
  if (f.validation_loss) report.set_validation_loss(*f.validation_loss);
  FillTimeline(reducer_->timeline(), &report);
  *report.mutable_memory() = memory_.Sample(config_.rank, replica_.Memory());
  hooks_.on_step(report);
}

}  // namespace gradsync::train

// One rank's part of a generation as a loop its caller drives:
//
//   Start   the dataset and the bucketed reducer, the layout check across ranks, parameters from
//           the job seed or the checkpoint it resumes from, rank 0's parameters broadcast;
//   Step    one optimizer step: this rank's shard from the sampler, forward and backward per
//           micro-batch with the reducer overlapping the all-reduce, one small all-reduce of the
//           loss, token count and checkpoint vote, the learning rate, clipping and AdamW; then the
//           hooks, rank 0's log line and progress, and a checkpoint when due or asked for (always
//           after the last step, with a checkpoint root), and the validation loss when due
//           (evaluator.h);
//   Finish  the digest of the synchronised parameters, rank 0's weights file, the result (with
//           this rank's memory: memory_meter.h).
//
// Train runs it to the end (the worker); gradsync-bench ddp drives it step by step. Every rank of
// the generation runs it alike. Plain types in, statuses out; no RPC here.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/comm/kv_client.h"
#include "gradsync/data/dataset.h"
#include "gradsync/ddp/reducer.h"
#include "gradsync/ddp/sampler.h"
#include "gradsync/train/activity.h"
#include "gradsync/train/evaluator.h"
#include "gradsync/train/live_state.h"
#include "gradsync/train/loss_smoother.h"
#include "gradsync/train/memory_meter.h"
#include "gradsync/train/replica.h"
#include "gradsync/train/train_checkpoint.h"
#include "gradsync/train/train_config.h"
#include "gradsync/v1/coordinator.pb.h"
#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/metrics.pb.h"

namespace gradsync::train {

struct TrainOutcome {
  std::string param_digest;
  v1::JobResult result;
};

// What the loop tells its caller, and what the caller may ask of it from other threads. Every
// member may be left empty; epoch_seed may not.
struct TrainHooks {
  // The generation's key-value namespace, for the layout check at rendezvous.
  comm::KvClient* kv = nullptr;
  // Called by every rank after each optimizer step with its figures (for the metrics service).
  std::function<void(const v1::StepReport&)> on_step;
  // Epoch seed for epoch e (from the coordinator's epoch plan).
  std::function<absl::StatusOr<uint64_t>(int epoch)> epoch_seed;
  // Called by rank 0 after each logged step with figures reduced across ranks.
  std::function<void(const v1::JobProgress&)> on_progress;
  // Set from another thread to stop at the next step boundary with ABORTED.
  const std::atomic<bool>* abort = nullptr;
  // Set from another thread (the coordinator asked) to checkpoint at the next step boundary; the
  // loop clears it once it has. All ranks agree on the step through the per-step all-reduce.
  std::atomic<bool>* checkpoint_requested = nullptr;
  // Set from another thread (the coordinator cancels the job) to end the loop at the next step
  // boundary as after its last step: the final checkpoint, then Finish's weights. All ranks agree
  // on the step through the per-step all-reduce.
  const std::atomic<bool>* stop = nullptr;
  // Called by every rank after each optimizer step with what the job has reached: the steps, the
  // first and the latest mean loss across ranks (equal on every rank). What a failing rank reports.
  std::function<void(const v1::JobResult&)> on_reached;
  // Called by every rank after writing its part of a checkpoint.
  std::function<void(const v1::ReportCheckpointRequest&)> on_checkpoint;
  // Called by every rank as each step begins (for the heartbeat's account of where it is).
  std::function<void(const StepMarker&)> on_step_begin;
  // Called by every rank as each step begins, before its collectives, with the step's number (from
  // 1), the data position it starts at, and the samples this rank trains on, by micro-step (padding
  // included): for data audits. A step that then fails on some rank is trained again by the next
  // generation from the same position, whose line supersedes this one; every step that completed
  // anywhere is in every rank's audit, a rank lost right after it included.
  std::function<void(int64_t step, const ddp::Position& from, const ddp::StepShard& shard)> on_samples;
  // The state this worker kept of the job's last generation (live_state.h): what the source rank
  // of a live resume (TrainConfig::live_from) sends the others. Null when it keeps none.
  const HeldState* held = nullptr;
};

// How a step treats the gradients.
enum class GradSync {
  // The last micro-step all-reduces the buckets while backward runs: data-parallel training.
  kAllReduce,
  // Every micro-step accumulates locally (no_sync), so replicas drift apart: what a step costs
  // without gradient communication, for gradsync-bench ddp.
  kLocalOnly,
};

class TrainLoop {
 public:
  // Prepares `replica` (CreateReplica's for `config`) for the first step to run: at step 0, or at
  // config.resume_from. Errors: the dataset's, the reducer's, the layout check's (every rank fails
  // naming the parameter), the checkpoint's, the broadcast's; INVALID_ARGUMENT when the data make
  // no full global batch under lastBatch "drop". `config`, `replica` and `hooks` must outlive the
  // loop.
  static absl::StatusOr<std::unique_ptr<TrainLoop>> Start(const TrainConfig& config, Replica& replica,
                                                          const TrainHooks& hooks);

  // Whether every step of the job has run, or the ranks agreed to stop (hooks.stop).
  bool done() const { return stopped_ || at_.step >= total_; }
  // Runs the next step. ABORTED when hooks.abort is set; INTERNAL when the loss is not finite;
  // the model's, the communicator's, the checkpoint's and epoch_seed's errors; FAILED_PRECONDITION
  // once done(). After an error the loop must not be stepped again.
  absl::Status Step(GradSync sync = GradSync::kAllReduce);
  // After the last step: the digest of the parameters every rank holds alike (ddp.ignoreParams
  // left out: those are each rank's own) and the job result; rank 0 writes the weights file to
  // config.weights_path, with its own copy of any ignored parameter. The replica's and the
  // weights file's errors.
  absl::StatusOr<TrainOutcome> Finish();
  // After a failed Step (or between steps): a host copy of the state of the last step every rank
  // committed, and where training stands, for the next generation's live recovery (live_state.h).
  // FAILED_PRECONDITION where the replica cannot hold it (CanHoldLive).
  absl::StatusOr<HeldState> Hold() const { return HoldState(config_, replica_, at_); }

  int64_t total_steps() const { return total_; }
  const ddp::Reducer& reducer() const { return *reducer_; }
  const data::Dataset& dataset() const { return *dataset_; }

 private:
  // One step's figures, filled as the step goes.
  struct StepFigures {
    int64_t step = 0;  // steps done before this one
    absl::Time start;
    // This rank's: loss summed over its tokens, tokens, samples (padding included), compute time.
    double loss_sum = 0;
    int64_t tokens = 0;
    int64_t samples = 0;
    double compute_seconds = 0;
    // Every rank's: real samples in the step, the mean loss, whether any rank wants a checkpoint.
    int64_t global_count = 0;
    double mean_loss = 0;
    bool checkpoint_voted = false;
    bool stop_voted = false;
    double lr = 0;
    double grad_norm = 0;
    // The validation loss, when the ranks evaluated after this step.
    std::optional<double> validation_loss;
  };

  TrainLoop(const TrainConfig& config, Replica& replica, const TrainHooks& hooks);
  absl::Status Prepare();
  absl::Status Resume();
  absl::StatusOr<ddp::StepShard> BeginStep();
  absl::Status ForwardBackward(const ddp::StepShard& shard, GradSync sync, StepFigures* f);
  // With a masked dataset (loss masks): fills this rank's micro-batches of the step into
  // masked_batches_ and returns 1 / (the targets that count over every rank's, all-reduced), so
  // the step's loss is the mean over the targets its masks keep, wherever they fall. A collective:
  // every rank calls it at every step.
  absl::StatusOr<float> FillMaskedStep(const ddp::StepShard& shard);
  absl::Status AgreeAcrossRanks(StepFigures* f);
  void Advance(const ddp::StepShard& shard, const StepFigures& f);
  absl::Status CheckpointIfDue(bool voted);
  // The validation loss when due (train_loop_eval.cc): into the figures and the result.
  absl::Status EvaluateIfDue(StepFigures* f);
  void LogProgress(const StepFigures& f);
  void ReportStep(const StepFigures& f);

  const TrainConfig& config_;
  Replica& replica_;
  const TrainHooks& hooks_;
  std::unique_ptr<data::Dataset> dataset_;
  std::unique_ptr<ddp::Reducer> reducer_;
  std::unique_ptr<Evaluator> evaluator_;
  ddp::ShardConfig shard_;
  nn::LrSchedule schedule_;
  int64_t total_ = 0;

  // Where training stands, and the epoch whose permutation is held.
  TrainPosition at_;
  bool stopped_ = false;
  int epoch_ = -1;
  ddp::EpochOrder order_;
  nn::Batch batch_;
  std::vector<nn::Batch> masked_batches_;

  // Throughput: over the steps since rank 0 last logged (window_), and over the steps after the
  // first few (steady_), which pay for warm-up.
  absl::Time window_start_;
  int64_t window_samples_ = 0;
  int64_t window_steps_ = 0;
  LossSmoother smoothed_loss_;
  int64_t warm_steps_ = 0;
  absl::Time steady_start_;
  int64_t steady_samples_ = 0;
  absl::Time train_start_;
  absl::Time last_checkpoint_;
  // This rank's memory, for each step report and the result.
  MemoryMeter memory_;
  v1::JobResult result_;
};

// Runs a TrainLoop from Start through every step to Finish; every rank of the generation calls it.
// `kept`, when given, is the state the caller keeps across generations for live recovery
// (live_state.h; hooks.held may point into it): once the loop has started it holds nothing, the
// loop having taken over; when a step fails it becomes the loop's Hold() (nothing where the replica
// cannot hold one); a start that fails leaves it as it was, unless this rank was the live source
// and holds another step than the one named, which would only fail again.
absl::StatusOr<TrainOutcome> Train(const TrainConfig& config, Replica& replica, const TrainHooks& hooks,
                                   std::optional<HeldState>* kept = nullptr);

}  // namespace gradsync::train

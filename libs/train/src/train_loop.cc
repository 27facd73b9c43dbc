// TrainLoop's start and finish, and Train. The step is in train_loop_step.cc, what a step reports
// (the log line, progress, the step report, checkpoints) in train_loop_report.cc.
#include "gradsync/train/train_loop.h"

#include <algorithm>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gradsync/ckpt/weights_file.h"
#include "gradsync/core/digest.h"
#include "gradsync/core/log.h"
#include "gradsync/ddp/layout_check.h"
#include "gradsync/spec/job_paths.h"
#include "gradsync/train/train_init.h"

namespace gradsync::train {
namespace {

static_assert(ddp::kPadSample == data::kPadIndex, "the sampler's padding slot is the dataset's padding index");

// Copies rank 0's parameters to every rank, bucket by bucket (ignored parameters stay local).
absl::Status BroadcastParams(const ddp::Reducer& reducer, std::span<float> params, comm::Communicator& comm) {
  std::vector<std::shared_ptr<comm::Work>> pending;
  for (const ddp::Bucket& b : reducer.buckets())
    pending.push_back(comm.Broadcast(params.subspan(b.offset, b.numel), 0));
  for (auto& w : pending) {
    if (absl::Status s = w->Wait(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The data files resolve inside the coordinator's data roots, checked right before they are read:
// a glob may match, or a path may have become, a symlink that leads out.
absl::Status CheckDataConfined(const TrainConfig& config) {
  if (config.data_roots.empty()) return absl::OkStatus();
  absl::StatusOr<spec::ConfinedRoots> roots = spec::ConfinedRoots::Open(config.data_roots, "data root");
  if (!roots.ok()) return roots.status();
  return spec::CheckDataFiles(config.data_paths, *roots);
}

// FNV-1a over the synchronised parameters in layout order: over all of them, the digest of the
// whole buffer (and of the weights file). Ignored parameters (ddp.ignoreParams) are each rank's
// own, as in DDP: replicas differ there by design, so the replica check leaves them out.
std::string SynchronisedDigest(const ddp::Reducer& reducer, const nn::ParamLayout& layout,
                               std::span<const float> params) {
  uint64_t h = Fnv1a64({});
  for (int i = 0; i < layout.size(); ++i) {
    if (!reducer.ignored(i)) h = Fnv1a64(std::as_bytes(layout.View(params, i)), h);
  }
  return absl::StrFormat("fnv1a64:%016x", h);
}

// With ignored parameters, each rank holds its own gradients for them: a clipping norm over them
// would scale each rank's synchronised gradients differently. The norm covers the synchronised ones.
absl::Status ScopeClipping(const ddp::Reducer& reducer, double grad_clip, Replica& replica) {
  if (grad_clip <= 0) return absl::OkStatus();
  std::vector<int> synced;
  const int n = replica.model().layout().size();
  for (int i = 0; i < n; ++i) {
    if (!reducer.ignored(i)) synced.push_back(i);
  }
  if (static_cast<int>(synced.size()) == n) return absl::OkStatus();
  return replica.SetClipScope(std::move(synced));
}

}  // namespace

TrainLoop::TrainLoop(const TrainConfig& config, Replica& replica, const TrainHooks& hooks)
    : config_(config), replica_(replica), hooks_(hooks) {}

absl::StatusOr<std::unique_ptr<TrainLoop>> TrainLoop::Start(const TrainConfig& config, Replica& replica,
                                                            const TrainHooks& hooks) {
  std::unique_ptr<TrainLoop> loop(new TrainLoop(config, replica, hooks));
  if (absl::Status s = loop->Prepare(); !s.ok()) return s;
  if (absl::Status s = loop->Resume(); !s.ok()) return s;
  return loop;
}

// The data, the reducer, and the layout check: every rank fails at once on a mismatch.
absl::Status TrainLoop::Prepare() {
  memory_.Start(config_.placement.device == spec::Device::kCuda);
  nn::Model& model = replica_.model();
  if (absl::Status s = CheckDataConfined(config_); !s.ok()) return s;
  auto dataset = data::CreateDataset(config_.plan.data);
  if (!dataset.ok()) return dataset.status();
  dataset_ = *std::move(dataset);
  auto evaluator = Evaluator::Create(config_, replica_.comm().size());
  if (!evaluator.ok()) return evaluator.status();
  evaluator_ = *std::move(evaluator);
  ddp::ReducerOptions reducer_options = config_.reducer;
  if (replica_.shards().grads_sharded()) {
    // The replica's shards: a rank keeps the reduced gradients of its own, and the rest of each
    // bucket's memory goes back once it is reduced.
    reducer_options.shard_bounds = replica_.shards().reducer_bounds();
    reducer_options.discard_unowned = [&model](int64_t begin, int64_t end) { model.DiscardGrads(begin, end); };
  }
  auto reducer = ddp::Reducer::Create(model.layout(), model.grads(), &replica_.comm(), reducer_options);
  if (!reducer.ok()) return reducer.status();
  reducer_ = *std::move(reducer);
  if (hooks_.kv == nullptr) return absl::OkStatus();
  return ddp::CheckLayoutAcrossRanks(hooks_.kv, config_.rank, replica_.comm().size(),
                                     absl::StrCat(model.Describe(), "\n", reducer_->LayoutDescription()),
                                     config_.comm_timeout);
}

// Parameters and position, and how far the run goes.
absl::Status TrainLoop::Resume() {
  nn::Model& model = replica_.model();
  // Every rank initialises from the job seed (or the checkpoint it resumes from); rank 0's values
  // are then broadcast so replicas start identical even if that ever were not so.
  replica_.InitParams(config_.seed);
  if (config_.live_from.has_value()) {
    // The state of a surviving rank's memory, identical on every rank once received: no broadcast
    // of rank 0's parameters after it.
    auto received = ReceiveLiveState(config_, *config_.live_from, hooks_.held, replica_);
    if (!received.ok()) return received.status();
    at_ = *received;
  } else if (config_.resume_from.step() > 0) {
    auto restored = RestoreCheckpoint(config_.resume_from, config_.rank, replica_);
    if (!restored.ok()) return restored.status();
    at_ = *restored;
  } else if (!config_.model_spec.init_from().empty()) {
    if (absl::Status s = InitFromWeights(config_, replica_); !s.ok()) return s;
  }
  // Sharded parameters (ddp.sharding "full") are whole on no rank, and each rank's shard came from
  // the same seed or checkpoint.
  if (!replica_.params_sharded() && !config_.live_from.has_value()) {
    if (absl::Status s = BroadcastParams(*reducer_, model.params(), replica_.comm()); !s.ok()) return s;
  }
  if (absl::Status s = ScopeClipping(*reducer_, config_.grad_clip, replica_); !s.ok()) return s;

  shard_ = config_.Shard(dataset_->size());
  total_ = at_.step + ddp::StepsRemaining(shard_, at_.data, at_.step, config_.max_steps, config_.epochs);
  if (ddp::TotalSteps(shard_, config_.max_steps, config_.epochs) <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("data: %d samples make no full global batch of %d with lastBatch \"drop\"", dataset_->size(),
                        shard_.global_batch()));
  }
  schedule_ = config_.Schedule(total_);
  if (config_.rank == 0) {
    GS_LOG(INFO) << model.Describe() << " on " << replica_.Describe() << "; " << dataset_->size()
                 << " samples, global batch " << shard_.global_batch() << ", " << total_ << " steps on "
                 << replica_.comm().size() << " ranks, " << reducer_->buckets().size() << " gradient buckets"
                 << (at_.step > 0 ? absl::StrCat(config_.live_from.has_value() ? "; resumed live at step "
                                                                                : "; resumed at step ",
                                                 at_.step)
                                  : std::string());
  }
  warm_steps_ = at_.step + std::min<int64_t>(3, (total_ - at_.step) / 4);
  train_start_ = steady_start_ = window_start_ = last_checkpoint_ = absl::Now();
  result_.set_initial_loss(at_.initial_loss);
  return absl::OkStatus();
}

absl::StatusOr<TrainOutcome> TrainLoop::Finish() {
  const double steady_secs = absl::ToDoubleSeconds(absl::Now() - steady_start_);
  const double sps = steady_secs > 0 ? static_cast<double>(steady_samples_) / steady_secs : 0.0;
  TrainOutcome out;
  out.result = result_;
  out.result.set_samples_per_second(sps);
  out.result.set_tokens_per_second(sps * static_cast<double>(config_.tokens_per_sample));
  out.result.set_train_seconds(absl::ToDoubleSeconds(absl::Now() - train_start_));
  out.result.set_world_size(replica_.comm().size());
  // Before the parameters are gathered whole for the weights file: the training's own peak.
  *out.result.add_memory() = memory_.Sample(config_.rank, replica_.Memory());
  absl::StatusOr<std::vector<float>> params = replica_.HostParams();
  if (!params.ok()) return params.status();
  const nn::ParamLayout& layout = replica_.model().layout();
  out.param_digest = SynchronisedDigest(*reducer_, layout, *params);
  if (config_.rank == 0) {
    if (absl::Status s = ckpt::SaveWeights(config_.weights_path, config_.model_spec, layout, *params); !s.ok()) {
      return s;
    }
    out.result.set_weights_path(config_.weights_path);
  }
  return out;
}

absl::StatusOr<TrainOutcome> Train(const TrainConfig& config, Replica& replica, const TrainHooks& hooks,
                                   std::optional<HeldState>* kept) {
  absl::StatusOr<std::unique_ptr<TrainLoop>> loop = TrainLoop::Start(config, replica, hooks);
  if (!loop.ok()) {
    if (kept != nullptr && kept->has_value() && config.live_from.has_value() &&
        config.live_from->source_rank == config.rank && (*kept)->at.step != config.live_from->step) {
      kept->reset();
    }
    return loop.status();
  }
  if (kept != nullptr) kept->reset();
  while (!(*loop)->done()) {
    absl::Status s = (*loop)->Step();
    if (s.ok()) continue;
    if (kept == nullptr) return s;
    absl::StatusOr<HeldState> held = (*loop)->Hold();
    if (held.ok()) {
      GS_LOG(INFO) << "keeping the state of step " << held->at.step << " in memory for a live recovery";
      *kept = *std::move(held);
    } else if (config.plan.schedule.recovery == spec::Recovery::kLive) {
      GS_LOG(INFO) << "no state kept for a live recovery: " << held.status().message();
    }
    return s;
  }
  return (*loop)->Finish();
}

}  // namespace gradsync::train

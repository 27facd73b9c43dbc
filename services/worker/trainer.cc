#include "trainer.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gradsync/ckpt/weights_file.h"
#include "gradsync/core/digest.h"
#include "gradsync/core/log.h"
#include "gradsync/data/dataset.h"
#include "gradsync/ddp/layout_check.h"
#include "gradsync/ddp/reducer.h"
#include "gradsync/ddp/sampler.h"
#include "gradsync/nn/model.h"
#include "gradsync/nn/optimizer.h"
#include "trainer_checkpoint.h"

namespace gradsync::worker {
namespace {

static_assert(ddp::kPadSample == data::kPadIndex, "the sampler's padding slot is the dataset's padding index");

ddp::ShardConfig ShardConfigOf(const v1::JobSpec& spec, int world_size, int64_t num_samples) {
  ddp::ShardConfig c;
  c.num_samples = num_samples;
  c.world_size = world_size;
  c.micro_batch = spec.training().micro_batch();
  c.grad_accum_steps = spec.training().grad_accum_steps();
  const std::string& policy = spec.data().last_batch();
  c.last_batch = policy == "drop" ? ddp::LastBatch::kDrop
                 : policy == "pad" ? ddp::LastBatch::kPad
                                   : ddp::LastBatch::kPartial;
  return c;
}

nn::LrSchedule ScheduleOf(const v1::TrainingSpec& t, int64_t total_steps) {
  nn::LrSchedule s;
  s.peak_lr = t.lr();
  s.warmup_steps = t.warmup_steps();
  s.total_steps = total_steps;
  s.cosine = t.lr_schedule() != "constant";
  s.min_lr_ratio = t.min_lr_ratio();
  return s;
}

ddp::ReducerOptions ReducerOptionsOf(const v1::DdpSpec& d) {
  ddp::ReducerOptions o;
  o.bucket_cap_mb = d.bucket_cap_mb();
  if (d.first_bucket_mb() > 0) o.first_bucket_mb = d.first_bucket_mb();
  o.wire = d.grad_compression() == "bf16" ? comm::WireType::kBFloat16 : comm::WireType::kFloat32;
  o.ignore_params.assign(d.ignore_params().begin(), d.ignore_params().end());
  o.timeout = absl::Seconds(d.timeout_seconds());
  return o;
}

// Tokens one sample trains on: a language model's sequence length; a classifier sample is one.
int64_t TokensPerSample(const v1::JobSpec& spec) {
  return spec.model().has_transformer() && spec.model().transformer().seq_len() > 0 ? spec.model().transformer().seq_len()
                                                                                  : 1;
}

// Copies rank 0's parameters to every rank, bucket by bucket (ignored parameters stay local).
absl::Status BroadcastParams(const ddp::Reducer& reducer, std::span<float> params, comm::Communicator& comm) {
  std::vector<std::shared_ptr<comm::Work>> pending;
  for (const ddp::Bucket& b : reducer.buckets()) pending.push_back(comm.Broadcast(params.subspan(b.offset, b.numel), 0));
  for (auto& w : pending) {
    if (absl::Status s = w->Wait(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

void FillReport(const ddp::StepTimeline& t, v1::StepReport* r) {
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

// Mean loss, throughput and timing over the steps since the last report.
struct Window {
  absl::Time start = absl::Now();
  int64_t samples = 0;
};

}  // namespace

absl::StatusOr<TrainOutcome> Train(const v1::Assignment& assignment, Replica& replica, const TrainHooks& hooks) {
  const v1::JobSpec& spec = assignment.spec();
  const v1::TrainingSpec& t = spec.training();
  comm::Communicator& comm = replica.comm();
  nn::Model& model = replica.model();
  const int rank = comm.rank();

  auto dataset_or = data::CreateDataset(spec);
  if (!dataset_or.ok()) return dataset_or.status();
  const data::Dataset& dataset = **dataset_or;

  auto reducer_or = ddp::Reducer::Create(model.layout(), model.grads(), &comm, ReducerOptionsOf(spec.ddp()));
  if (!reducer_or.ok()) return reducer_or.status();
  ddp::Reducer& reducer = **reducer_or;
  if (hooks.kv != nullptr) {
    absl::Status s = ddp::CheckLayoutAcrossRanks(hooks.kv, rank, comm.size(),
                                                 absl::StrCat(model.Describe(), "\n", reducer.LayoutDescription()),
                                                 absl::Seconds(spec.ddp().timeout_seconds()));
    if (!s.ok()) return s;
  }

  // Every rank initialises from the job seed (or the checkpoint it resumes from); rank 0's values
  // are then broadcast so replicas start identical even if that ever were not so.
  model.InitParams(t.seed());
  TrainPosition at;
  if (assignment.resume_from().step() > 0) {
    auto restored = RestoreCheckpoint(assignment.resume_from(), rank, replica);
    if (!restored.ok()) return restored.status();
    at = *restored;
  }
  if (absl::Status s = BroadcastParams(reducer, model.params(), comm); !s.ok()) return s;

  const ddp::ShardConfig shard = ShardConfigOf(spec, comm.size(), dataset.size());
  const int64_t total = at.step + ddp::StepsRemaining(shard, at.data, at.step, t.max_steps(), t.epochs());
  if (ddp::TotalSteps(shard, t.max_steps(), t.epochs()) <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "data: %d samples make no full global batch of %d with lastBatch \"drop\"", dataset.size(),
        shard.global_batch()));
  }
  const nn::LrSchedule schedule = ScheduleOf(t, total);
  const int64_t tokens_per_sample = TokensPerSample(spec);
  const v1::CheckpointSpec& cs = spec.checkpoint();
  if (rank == 0) {
    GS_LOG(INFO) << model.Describe() << " on " << replica.Describe() << "; " << dataset.size() << " samples, global batch "
                 << shard.global_batch() << ", " << total << " steps on " << comm.size() << " ranks, "
                 << reducer.buckets().size() << " gradient buckets"
                 << (at.step > 0 ? absl::StrCat("; resumed at step ", at.step) : std::string());
  }

  const int64_t warm_steps = at.step + std::min<int64_t>(3, (total - at.step) / 4);
  absl::Time steady_start = absl::Now();
  int64_t steady_samples = 0;
  const absl::Time train_start = absl::Now();
  absl::Time last_checkpoint = absl::Now();
  Window window;
  TrainOutcome out;
  v1::JobResult& result = out.result;
  result.set_initial_loss(at.initial_loss);

  int epoch = -1;
  std::vector<int64_t> permutation;
  nn::Batch batch;
  for (; at.step < total; ) {
    const int64_t step = at.step;
    if (hooks.abort != nullptr && hooks.abort->load()) {
      return absl::AbortedError(absl::StrCat("aborted by the coordinator at step ", step));
    }
    if (at.data.epoch != epoch) {
      auto seed = hooks.epoch_seed(at.data.epoch);
      if (!seed.ok()) return seed.status();
      permutation = ddp::EpochPermutation(*seed, shard.num_samples);
      epoch = at.data.epoch;
    }
    const ddp::StepShard mine = ddp::ShardForStep(shard, permutation, at.data.cursor, rank);
    if (hooks.on_step_begin) {
      hooks.on_step_begin(StepMarker{step + 1, comm.sequence(), static_cast<int>(reducer.buckets().size())});
    }
    const ddp::Position from = at.data;
    // The mean over every token of the global step, however the samples fall across ranks.
    const float scale = 1.0f / static_cast<float>(mine.global_count * tokens_per_sample);

    const absl::Time step_start = absl::Now();
    model.ZeroGrads();
    double loss_sum = 0.0;
    int64_t local_samples = 0, local_tokens = 0;
    double compute_seconds = 0.0;
    const nn::GradsReadyFn on_ready = [&reducer](int first, int last) { reducer.MarkReady(first, last); };
    for (size_t k = 0; k < mine.micro_indices.size(); ++k) {
      // Only the last micro-step communicates; earlier ones accumulate locally (no_sync).
      reducer.BeginStep(k + 1 == mine.micro_indices.size());
      dataset.Fill(mine.micro_indices[k], &batch);
      auto loss = model.ForwardBackward(batch, scale, on_ready);
      if (!loss.ok()) return loss.status();
      loss_sum += loss->sum;
      local_tokens += loss->count;
      local_samples += static_cast<int64_t>(mine.micro_indices[k].size());
      if (absl::Status s = reducer.FinishStep(); !s.ok()) return s;
      compute_seconds += reducer.timeline().compute_seconds;
    }
    // One small all-reduce carries the loss, the token count, and whether any rank wants a
    // checkpoint now, so every rank checkpoints after the same step.
    const bool by_time = rank == 0 && cs.every_seconds() > 0 &&
                         absl::Now() - last_checkpoint >= absl::Seconds(cs.every_seconds());
    const bool asked = hooks.checkpoint_requested != nullptr && hooks.checkpoint_requested->load();
    std::vector<double> reduced = {loss_sum, static_cast<double>(local_tokens), (by_time || asked) ? 1.0 : 0.0};
    if (absl::Status s = comm.AllReduceSum(std::span<double>(reduced)); !s.ok()) return s;
    const double mean_loss = reduced[0] / std::max(1.0, reduced[1]);
    if (!std::isfinite(mean_loss)) {
      return absl::InternalError(absl::StrFormat("loss is %f at step %d", mean_loss, step));
    }

    const double lr = schedule.At(step);
    absl::StatusOr<double> norm_or = replica.Step(lr, t.grad_clip());
    if (!norm_or.ok()) return norm_or.status();
    const double grad_norm = *norm_or;

    if (step == 0) {
      result.set_initial_loss(mean_loss);
      at.initial_loss = mean_loss;
    }
    result.set_final_loss(mean_loss);
    result.set_samples_seen(result.samples_seen() + mine.global_count);
    window.samples += mine.global_count;
    if (step + 1 == warm_steps) steady_start = absl::Now();
    if (step + 1 > warm_steps) steady_samples += mine.global_count;
    at.step = step + 1;
    at.data = ddp::Advance(shard, at.data);
    if (hooks.on_samples) hooks.on_samples(at.step, from, mine);

    const bool last = at.step == total;
    const bool by_steps = cs.every_steps() > 0 && at.step % cs.every_steps() == 0;
    if (!last && (by_steps || reduced[2] > 0)) {
      if (hooks.checkpoint_requested != nullptr) hooks.checkpoint_requested->store(false);
      last_checkpoint = absl::Now();
      auto report = WriteCheckpoint(assignment, rank, comm.size(), replica, at);
      if (!report.ok()) return report.status();
      if (hooks.on_checkpoint) hooks.on_checkpoint(*report);
    }
    if (rank == 0 && (at.step % t.log_every() == 0 || last || step == 0)) {
      const double secs = absl::ToDoubleSeconds(absl::Now() - window.start);
      const double sps = secs > 0 ? static_cast<double>(window.samples) / secs : 0.0;
      GS_LOG(INFO) << absl::StrFormat("step %d/%d | epoch %d | loss %.4f | lr %.2e | norm %.3f | %.0f samples/s",
                                      at.step, total, epoch, mean_loss, lr, grad_norm, sps);
      if (hooks.on_progress) {
        v1::JobProgress p;
        p.set_step(at.step);
        p.set_total_steps(total);
        p.set_epoch(epoch);
        p.set_loss(mean_loss);
        p.set_samples_per_second(sps);
        p.set_tokens_per_second(sps * static_cast<double>(tokens_per_sample));
        hooks.on_progress(p);
      }
      window = Window();
    }
    result.set_global_step(at.step);
    if (hooks.on_step) {
      v1::StepReport report;
      report.set_rank(rank);
      report.set_world_size(comm.size());
      report.set_step(at.step);
      report.set_epoch(epoch);
      report.set_loss(local_tokens > 0 ? loss_sum / static_cast<double>(local_tokens) : 0.0);
      report.set_samples(local_samples);
      report.set_tokens(local_samples * tokens_per_sample);
      report.set_step_seconds(absl::ToDoubleSeconds(absl::Now() - step_start));
      report.set_compute_seconds(compute_seconds);
      report.set_grad_norm(grad_norm);
      report.set_learning_rate(lr);
      FillReport(reducer.timeline(), &report);
      hooks.on_step(report);
    }
  }

  const double steady_secs = absl::ToDoubleSeconds(absl::Now() - steady_start);
  const double sps = steady_secs > 0 ? static_cast<double>(steady_samples) / steady_secs : 0.0;
  result.set_samples_per_second(sps);
  result.set_tokens_per_second(sps * static_cast<double>(TokensPerSample(spec)));
  result.set_train_seconds(absl::ToDoubleSeconds(absl::Now() - train_start));
  result.set_world_size(comm.size());
  absl::StatusOr<std::vector<float>> params = replica.HostParams();
  if (!params.ok()) return params.status();
  out.param_digest = DigestString(std::as_bytes(std::span<const float>(*params)));
  if (rank == 0) {
    if (absl::Status s = ckpt::SaveWeights(assignment.weights_path(), spec.model(), model.layout(), *params); !s.ok()) {
      return s;
    }
    result.set_weights_path(assignment.weights_path());
  }
  return out;
}

}  // namespace gradsync::worker

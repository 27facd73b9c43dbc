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

namespace gradsync::worker {
namespace {

ddp::ShardConfig ShardConfigOf(const v1::JobSpec& spec, int world_size, int64_t num_samples) {
  ddp::ShardConfig c;
  c.num_samples = num_samples;
  c.world_size = world_size;
  c.micro_batch = spec.training().micro_batch();
  c.grad_accum_steps = spec.training().grad_accum_steps();
  c.last_batch = spec.data().last_batch() == "drop" ? ddp::LastBatch::kDrop : ddp::LastBatch::kPartial;
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

absl::StatusOr<TrainOutcome> Train(const v1::Assignment& assignment, comm::Communicator& comm,
                                   const TrainHooks& hooks) {
  const v1::JobSpec& spec = assignment.spec();
  const v1::TrainingSpec& t = spec.training();
  const int rank = comm.rank();

  auto model_or = nn::CreateModel(spec);
  if (!model_or.ok()) return model_or.status();
  nn::Model& model = **model_or;
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

  // Every rank initialises from the job seed; rank 0's values are then broadcast so replicas start
  // identical even if initialisation ever became nondeterministic.
  model.InitParams(t.seed());
  if (absl::Status s = BroadcastParams(reducer, model.params(), comm); !s.ok()) return s;

  const ddp::ShardConfig shard = ShardConfigOf(spec, comm.size(), dataset.size());
  const int64_t total = ddp::TotalSteps(shard, t.max_steps(), t.epochs());
  if (total <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "data: %d samples make no full global batch of %d with lastBatch \"drop\"", dataset.size(),
        shard.global_batch()));
  }
  const nn::LrSchedule schedule = ScheduleOf(t, total);
  nn::AdamW optimizer(model.layout(), {t.beta1(), t.beta2(), t.eps(), t.weight_decay()});
  if (rank == 0) {
    GS_LOG(INFO) << model.Describe() << "; " << dataset.size() << " samples, global batch "
                 << shard.global_batch() << ", " << total << " steps on " << comm.size() << " ranks, "
                 << reducer.buckets().size() << " gradient buckets";
  }

  const int64_t warm_steps = std::min<int64_t>(3, total / 4);
  absl::Time steady_start = absl::Now();
  int64_t steady_samples = 0;
  const absl::Time train_start = absl::Now();
  Window window;
  TrainOutcome out;
  v1::JobResult& result = out.result;

  int epoch = -1;
  std::vector<int64_t> permutation;
  nn::Batch batch;
  for (int64_t step = 0; step < total; ++step) {
    if (hooks.abort != nullptr && hooks.abort->load()) {
      return absl::AbortedError(absl::StrCat("aborted by the coordinator at step ", step));
    }
    const ddp::Position pos = ddp::PositionOfStep(shard, step);
    if (pos.epoch != epoch) {
      auto seed = hooks.epoch_seed(pos.epoch);
      if (!seed.ok()) return seed.status();
      permutation = ddp::EpochPermutation(*seed, shard.num_samples);
      epoch = pos.epoch;
    }
    const ddp::StepShard mine = ddp::ShardForStep(shard, permutation, pos.cursor, rank);
    const float scale = 1.0f / static_cast<float>(mine.global_count);

    const absl::Time step_start = absl::Now();
    model.ZeroGrads();
    double loss_sum = 0.0;
    int64_t local_count = 0;
    double compute_seconds = 0.0;
    const nn::GradsReadyFn on_ready = [&reducer](int first, int last) { reducer.MarkReady(first, last); };
    for (size_t k = 0; k < mine.micro_indices.size(); ++k) {
      // Only the last micro-step communicates; earlier ones accumulate locally (no_sync).
      reducer.BeginStep(k + 1 == mine.micro_indices.size());
      dataset.Fill(mine.micro_indices[k], &batch);
      auto loss = model.ForwardBackward(batch, scale, on_ready);
      if (!loss.ok()) return loss.status();
      loss_sum += loss->sum;
      local_count += loss->count;
      if (absl::Status s = reducer.FinishStep(); !s.ok()) return s;
      compute_seconds += reducer.timeline().compute_seconds;
    }
    std::vector<double> loss_pair = {loss_sum, 0.0};
    if (absl::Status s = comm.AllReduceSum(std::span<double>(loss_pair)); !s.ok()) return s;
    const double mean_loss = loss_pair[0] / static_cast<double>(mine.global_count);
    if (!std::isfinite(mean_loss)) {
      return absl::InternalError(absl::StrFormat("loss is %f at step %d", mean_loss, step));
    }

    const double grad_norm = nn::ClipGlobalNorm(model.grads(), t.grad_clip());
    const double lr = schedule.At(step);
    optimizer.Step(model.params(), model.grads(), lr);

    if (step == 0) result.set_initial_loss(mean_loss);
    result.set_final_loss(mean_loss);
    result.set_samples_seen(result.samples_seen() + mine.global_count);
    window.samples += mine.global_count;
    if (step + 1 == warm_steps) steady_start = absl::Now();
    if (step + 1 > warm_steps) steady_samples += mine.global_count;

    const bool last = step + 1 == total;
    if (rank == 0 && ((step + 1) % t.log_every() == 0 || last || step == 0)) {
      const double secs = absl::ToDoubleSeconds(absl::Now() - window.start);
      const double sps = secs > 0 ? static_cast<double>(window.samples) / secs : 0.0;
      GS_LOG(INFO) << absl::StrFormat("step %d/%d | epoch %d | loss %.4f | lr %.2e | norm %.3f | %.0f samples/s",
                                      step + 1, total, epoch, mean_loss, lr, grad_norm, sps);
      if (hooks.on_progress) {
        v1::JobProgress p;
        p.set_step(step + 1);
        p.set_total_steps(total);
        p.set_epoch(epoch);
        p.set_loss(mean_loss);
        p.set_samples_per_second(sps);
        p.set_tokens_per_second(sps);
        hooks.on_progress(p);
      }
      window = Window();
    }
    result.set_global_step(step + 1);
    if (hooks.on_step) {
      v1::StepReport report;
      report.set_rank(rank);
      report.set_world_size(comm.size());
      report.set_step(step + 1);
      report.set_epoch(epoch);
      report.set_loss(local_count > 0 ? loss_sum / static_cast<double>(local_count) : 0.0);
      report.set_samples(local_count);
      report.set_tokens(local_count);
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
  // A classifier sample is one token; language models report tokens separately.
  result.set_tokens_per_second(sps);
  result.set_train_seconds(absl::ToDoubleSeconds(absl::Now() - train_start));
  result.set_world_size(comm.size());
  out.param_digest = DigestString(std::as_bytes(model.params()));
  if (rank == 0) {
    if (absl::Status s = ckpt::SaveWeights(assignment.weights_path(), spec.model(), model.layout(), model.params()); !s.ok()) {
      return s;
    }
    result.set_weights_path(assignment.weights_path());
  }
  return out;
}

}  // namespace gradsync::worker

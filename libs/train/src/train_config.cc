#include "gradsync/train/train_config.h"

namespace gradsync::train {
namespace {

// The spec's choices as enums, each read once here.
struct Choices {
  spec::GradCompression grad_compression;
  spec::Transport transport;
  spec::Placement placement;
};

absl::StatusOr<Choices> ReadChoices(const v1::Assignment& a) {
  const v1::JobSpec& spec = a.spec();
  const auto grad_compression = spec::ParseGradCompression(spec.ddp().grad_compression());
  const auto transport = spec::ParseTransport(spec.ddp().transport());
  const auto placement = spec::ParsePlacement(a.placement());
  for (const absl::Status& s : {grad_compression.status(), transport.status(), placement.status()}) {
    if (!s.ok()) return s;
  }
  return Choices{*grad_compression, *transport, *placement};
}

void SetTraining(const spec::SchedulePlan& t, TrainConfig* c) {
  c->max_steps = t.max_steps;
  c->epochs = t.epochs;
  c->seed = t.seed;
  c->sampler.world_size = c->world_size;
  c->sampler.micro_batch = t.micro_batch;
  c->sampler.grad_accum_steps = t.grad_accum_steps;
  c->sampler.last_batch = t.last_batch;
  c->adamw = {t.beta1, t.beta2, t.eps, t.weight_decay};
  c->grad_clip = t.grad_clip;
  c->lr.peak_lr = t.lr;
  c->lr.warmup_steps = t.warmup_steps;
  c->lr.min_lr_ratio = t.min_lr_ratio;
  c->lr.cosine = t.lr_schedule == spec::LrSchedule::kCosine;
  c->log_every = t.log_every;
  c->eval_every = t.eval_every;
}

void SetDdp(const v1::DdpSpec& d, spec::GradCompression compression, TrainConfig* c) {
  c->reducer.bucket_cap_mb = d.bucket_cap_mb();
  if (d.first_bucket_mb() > 0) c->reducer.first_bucket_mb = d.first_bucket_mb();
  c->reducer.wire = compression == spec::GradCompression::kBf16 ? comm::WireType::kBFloat16 : comm::WireType::kFloat32;
  c->reducer.timeout = absl::Seconds(d.timeout_seconds());
  c->comm_timeout = absl::Seconds(d.timeout_seconds());
}

}  // namespace

absl::StatusOr<TrainConfig> TrainConfigFromAssignment(const v1::Assignment& a) {
  absl::StatusOr<Choices> choices = ReadChoices(a);
  if (!choices.ok()) return choices.status();
  const v1::JobSpec& spec = a.spec();
  absl::StatusOr<spec::JobPlan> plan = spec::PlanJob(spec);
  if (!plan.ok()) return plan.status();
  TrainConfig c;
  c.job_id = a.job_id();
  c.generation = a.generation();
  c.rank = a.rank();
  c.world_size = a.world_size();
  c.placement = choices->placement;
  c.plan = *std::move(plan);
  c.model_spec = spec.model();
  c.data_paths = spec::DataPaths(spec);
  c.data_roots.assign(a.data_roots().begin(), a.data_roots().end());
  if (!a.artifact_root().empty()) {
    c.init_roots = c.data_roots;
    c.init_roots.push_back(a.artifact_root());
  }
  SetTraining(c.plan.schedule, &c);
  if (const nn::TransformerPlan* t = c.plan.model.transformer()) c.tokens_per_sample = t->dims.seq_len;
  c.checkpoint_root = a.checkpoint_root();
  c.checkpoint_every_steps = spec.checkpoint().every_steps();
  c.checkpoint_every = absl::Seconds(spec.checkpoint().every_seconds());
  c.resume_from = a.resume_from();
  if (a.has_live_from()) c.live_from = LiveSource{a.live_from().source_rank(), a.live_from().step()};
  c.weights_path = a.weights_path();
  SetDdp(spec.ddp(), choices->grad_compression, &c);
  // Only parameters leave the buckets; the buffers ddp.ignoreParams names are never synchronised.
  c.reducer.ignore_params = c.plan.ignore.params;
  c.shared_memory = choices->transport != spec::Transport::kTcp;
  return c;
}

ddp::ShardConfig TrainConfig::Shard(int64_t num_samples) const {
  ddp::ShardConfig s = sampler;
  s.num_samples = num_samples;
  return s;
}

nn::LrSchedule TrainConfig::Schedule(int64_t total_steps) const {
  nn::LrSchedule s = lr;
  s.total_steps = total_steps;
  return s;
}

}  // namespace gradsync::train

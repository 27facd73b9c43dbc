#include "reduce_step.h"

#include <algorithm>
#include <vector>

namespace gradsync::telemetry {
namespace {

// Mean and maximum of one timing over the reporting ranks.
struct MeanMax {
  double sum = 0;
  double max = 0;
  void Add(double v) {
    sum += v;
    max = std::max(max, v);
  }
};

int64_t BucketBytes(const v1::StepReport& r) {
  int64_t bytes = 0;
  for (const v1::BucketTiming& b : r.buckets()) bytes += b.bytes();
  return bytes;
}

}  // namespace

v1::ReducedStep ReduceStep(const std::map<int32_t, v1::StepReport>& reports, int32_t world_size,
                           double straggler_factor) {
  const v1::StepReport& first = reports.begin()->second;  // the lowest rank: rank 0 if present
  v1::ReducedStep out;
  out.set_job_id(first.job_id());
  out.set_generation(first.generation());
  out.set_step(first.step());
  out.set_epoch(first.epoch());
  out.set_world_size(world_size);
  out.set_grad_norm(first.grad_norm());
  out.set_learning_rate(first.learning_rate());
  if (first.has_validation_loss()) out.set_validation_loss(first.validation_loss());
  for (int32_t rank = 0; rank < world_size; ++rank) {
    if (!reports.contains(rank)) out.add_missing_ranks(rank);
  }
  out.set_partial(out.missing_ranks_size() > 0);

  double loss_sum = 0;
  MeanMax compute, comm, exposed;
  std::vector<double> step_times;
  out.set_slowest_rank(first.rank());
  for (const auto& [rank, r] : reports) {
    loss_sum += r.loss();
    out.set_samples(out.samples() + r.samples());
    out.set_tokens(out.tokens() + r.tokens());
    compute.Add(r.compute_seconds());
    comm.Add(r.communication_seconds());
    exposed.Add(r.exposed_communication_seconds());
    step_times.push_back(r.step_seconds());
    if (r.step_seconds() > out.step_seconds()) {
      out.set_step_seconds(r.step_seconds());
      out.set_slowest_rank(rank);
    }
    v1::RankStep* rs = out.add_ranks();
    rs->set_rank(rank);
    rs->set_loss(r.loss());
    rs->set_step_seconds(r.step_seconds());
    rs->set_compute_seconds(r.compute_seconds());
    rs->set_communication_seconds(r.communication_seconds());
    rs->set_exposed_communication_seconds(r.exposed_communication_seconds());
    rs->set_allreduce_bytes(BucketBytes(r));
    out.set_allreduce_bytes(out.allreduce_bytes() + rs->allreduce_bytes());
  }
  const double n = static_cast<double>(reports.size());
  out.set_loss(loss_sum / n);
  out.set_mean_compute_seconds(compute.sum / n);
  out.set_max_compute_seconds(compute.max);
  out.set_mean_communication_seconds(comm.sum / n);
  out.set_max_communication_seconds(comm.max);
  out.set_mean_exposed_communication_seconds(exposed.sum / n);
  out.set_max_exposed_communication_seconds(exposed.max);
  if (out.step_seconds() > 0) {
    out.set_tokens_per_second(static_cast<double>(out.tokens()) / out.step_seconds());
  }

  std::sort(step_times.begin(), step_times.end());
  const double median = step_times[(step_times.size() - 1) / 2];
  if (step_times.size() >= 2 && median > 0) {
    for (const auto& [rank, r] : reports) {
      if (r.step_seconds() > straggler_factor * median) out.add_straggler_ranks(rank);
    }
  }
  return out;
}

}  // namespace gradsync::telemetry

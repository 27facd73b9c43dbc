// The memory a job's model takes on every rank, checked when the job is submitted. A spec can ask
// for a model no worker can hold (`model.mlp.hiddenDims: [65536, 65536]` is 4.3G parameters); let
// through, it would be scheduled and fail, or kill, the setup of every worker it reaches.
//
// A rank holds the parameters, their gradients and AdamW's two moments, all fp32: 16 bytes a
// parameter unsharded. ddp.sharding divides them over the ranks (ddp::RankStateBytes): the budget
// takes the shard of the fewest ranks the job runs on (training.minWorkers for an elastic job), so a
// model too large for one worker is admitted when sharding makes its share fit. The synthetic
// task's teacher network (fp64 weights, data.synthetic) lives beside it on every rank and counts
// too. Activations, which grow with the batch, are not counted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/ddp/shard_plan.h"
#include "gradsync/spec/job_plan.h"

namespace gradsync::coordinator {

// What a worker may give one job's model unless the operator says otherwise: 16 GiB, what a
// common cloud machine's share or a 16 GB GPU holds.
inline constexpr int64_t kDefaultMaxModelBytes = int64_t{16} << 30;

// Bytes a rank holds for each parameter unsharded: the parameter, its gradient, AdamW's two moments.
inline constexpr int64_t kBytesPerParam = 4 * sizeof(float);

struct ModelFootprint {
  int64_t params = 0;  // the model's parameters
  int world_size = 1;  // the ranks its state is divided over
  spec::Sharding sharding = spec::Sharding::kNone;
  int64_t model_bytes = 0;    // a rank's parameters, gradients and moments (params x kBytesPerParam unsharded)
  int64_t teacher_bytes = 0;  // the synthetic task's teacher network; 0 for token data
  std::string field;          // the spec field that sizes the model
};

// The footprint on each of `world_size` ranks of the job `plan` describes.
ModelFootprint FootprintOf(const spec::JobPlan& plan, int world_size);

// OK when a rank's share of the model and the teacher beside it fit in `max_bytes`. INVALID_ARGUMENT
// otherwise, naming the field, the model's size and the budget, e.g. "model.mlp.hiddenDims: the
// model's 4297850890 parameters take 64.0 GiB with their gradients and AdamW's two moments, over
// the 16.0 GiB a worker gives one job's model (coordinator flag --max_model_bytes)"; sharded, the
// message says which mode over how many ranks.
absl::Status CheckModelBudget(const ModelFootprint& footprint, int64_t max_bytes);

// The plan of a native job whose model fits the budget over the fewest ranks it runs on: PlanJob's
// errors, or CheckModelBudget's. nullopt for a script job, whose model the coordinator cannot see.
absl::StatusOr<std::optional<spec::JobPlan>> PlanWithinBudget(const v1::JobSpec& spec, int64_t max_bytes);

}  // namespace gradsync::coordinator

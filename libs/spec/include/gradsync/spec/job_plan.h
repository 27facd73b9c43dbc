// A job spec as the libraries build from it: after FillDefaults and ValidateJobSpec, the spec is
// resolved once into typed plans, and nothing past this boundary reads the spec's model or data
// sections again. The model plan (gradsync/nn/model_plan.h) builds the network on the CPU or the GPU
// and sizes the coordinator's budget; the data plan (gradsync/data/data_plan.h) builds the dataset
// and the validation set; the schedule (SchedulePlan) is the worker's training configuration's; the
// sharding mode with the world size gives each rank's shard
// (gradsync/ddp/shard_plan.h).
//
// A plan is only ever built from a whole spec, so each check names the spec field it reads, with the
// messages the libraries gave before they took plans (e.g. "model.mlp.hiddenDims[1]: must be at
// least 1, got 0", "data.text: token data needs a transformer preset, got model.preset \"mlp\"").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/data/data_plan.h"
#include "gradsync/nn/model_plan.h"
#include "gradsync/spec/choices.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::spec {

// training: how long a run goes, its batch and sample order, the optimizer and its learning-rate
// schedule, and how often a rank logs and evaluates. Every value as the spec gives it with its
// defaults filled; 0 for max_steps or epochs is no limit by that measure.
struct SchedulePlan {
  int64_t max_steps = 0;
  int epochs = 0;
  uint64_t seed = 0;  // the sample order's (and the parameters', ModelPlan::seed)
  int micro_batch = 0;
  int grad_accum_steps = 0;
  LastBatch last_batch = LastBatch::kPartial;
  double lr = 0;  // the peak
  int64_t warmup_steps = 0;
  double min_lr_ratio = 0;
  LrSchedule lr_schedule = LrSchedule::kCosine;
  double beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  double grad_clip = 0;  // 0: no clipping
  int log_every = 0;
  int64_t eval_every = 0;
  Recovery recovery = Recovery::kLive;
};

// ddp.ignoreParams, split by what each name is: patterns of parameters to leave out of the
// gradient buckets (the reducer refuses one that matches no parameter), and names of the model's
// buffers (nn::ModelPlan::BufferNames), which are never synchronised anyway. A PyTorch script's
// `_ddp_params_and_buffers_to_ignore = {"freqs_cos", "freqs_sin"}` copied into the spec lands in
// `buffers`: nothing to do, and the coordinator says so in the job's events.
struct IgnorePlan {
  std::vector<std::string> params;
  std::vector<std::string> buffers;
};

struct JobPlan {
  nn::ModelPlan model;
  data::DataPlan data;
  SchedulePlan schedule;
  Sharding sharding = Sharding::kNone;
  IgnorePlan ignore;
};

// The model of `spec` (its defaults filled or not: a transformer is resolved from its preset here).
// INVALID_ARGUMENT naming the field: an unknown preset, a transformer configuration that is not
// valid, an mlp without data.synthetic (it takes its input and output sizes from there), a width
// below 1 or an unknown activation.
absl::StatusOr<nn::ModelPlan> PlanModel(const v1::JobSpec& spec);

// The data of `spec`: data.synthetic (the mlp preset only) or data.text / data.shards (transformer
// presets only, with the model's seqLen and vocabSize), and data.validation.paths unless empty or
// disabled. INVALID_ARGUMENT naming the field. Reads no file.
absl::StatusOr<data::DataPlan> PlanData(const v1::JobSpec& spec);

// The training section: its choices read (data.lastBatch, training.lrSchedule), INVALID_ARGUMENT
// in ValidateJobSpec's words otherwise.
absl::StatusOr<SchedulePlan> PlanSchedule(const v1::JobSpec& spec);

// ddp.ignoreParams against the planned model: the names of its buffers, and of its parameters or
// their prefixes ("blocks.0.", ending in a dot, names every parameter under it). INVALID_ARGUMENT
// naming the entry that matches neither, with the closest name and the command that lists them all
// (`gradsync model params`): found when the job is submitted, not when its ranks set up.
absl::StatusOr<IgnorePlan> PlanIgnore(const v1::JobSpec& spec, const nn::ModelPlan& model);

// The event a job gets when ddp.ignoreParams names buffers: what they are and why nothing is done
// for them; "" when it names none.
std::string IgnoredBuffersNotice(const IgnorePlan& ignore);

// PlanModel, PlanData (with the model just planned), PlanSchedule, ddp.sharding and
// ddp.ignoreParams, in that order; the first error.
absl::StatusOr<JobPlan> PlanJob(const v1::JobSpec& spec);

}  // namespace gradsync::spec

// What one rank's part of a generation runs with, as typed values. TrainConfigFromAssignment
// builds it once, where an assignment enters the worker (Agent::RunAssignment; gradsync-bench ddp
// builds an assignment and calls the same function). Past it the worker reads no spec field as
// text: CreateReplica, TrainLoop and the checkpoint code take this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/ddp/reducer.h"
#include "gradsync/ddp/sampler.h"
#include "gradsync/nn/optimizer.h"
#include "gradsync/spec/choices.h"
#include "gradsync/spec/job_paths.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/v1/coordinator.pb.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::train {

// Where a generation's state comes from when it resumes live (Assignment.live_from).
struct LiveSource {
  // The rank of the new generation whose worker holds the state, and the steps done in it.
  int source_rank = 0;
  int64_t step = 0;
};

struct TrainConfig {
  // The generation and this rank's place in it.
  std::string job_id;
  int generation = 0;
  int rank = 0;
  int world_size = 1;
  // Where this rank computes and how the generation exchanges gradients (the coordinator's
  // resolution of the spec's "auto" choices).
  spec::Placement placement;
  // The job's model, data and sharding mode, resolved once (gradsync/spec/job_plan.h): what
  // nn::CreateModel, nn::cuda::CreateCudaModel, data::CreateDataset and the replicas build from.
  spec::JobPlan plan;
  // The spec's model section with its defaults filled: what checkpoints and weights files record
  // of the model (libs/ckpt), and model.initFrom.
  v1::ModelSpec model_spec;
  // The data paths as the spec names them (spec::DataPaths), checked again right before reading.
  std::vector<spec::DataPath> data_paths;
  // The coordinator's data roots: every file the data paths match must resolve inside one of them
  // when it is read. Empty (an older coordinator): not checked.
  std::vector<std::string> data_roots;
  // Where spec.model.init_from may resolve: the data roots and the artifact root. Empty (an older
  // coordinator): not checked.
  std::vector<std::string> init_roots;

  // How long training runs: max_steps optimizer steps (0: no limit), epochs passes over the data
  // (0: no limit); whichever ends first.
  int64_t max_steps = 0;
  int epochs = 0;
  // Parameter initialisation and every epoch's sample order.
  uint64_t seed = 0;
  // The sampler's options; Shard() fills in the data size.
  ddp::ShardConfig sampler;
  // Tokens one sample trains on: a language model's sequence length; a classifier sample is one.
  int64_t tokens_per_sample = 1;

  // The optimizer: AdamW, the global gradient norm clipped to grad_clip (0: no clipping), and the
  // learning-rate schedule; Schedule() fills in the run's length.
  nn::AdamWConfig adamw;
  double grad_clip = 0;
  nn::LrSchedule lr;

  // Rank 0 logs and reports progress every this many steps.
  int log_every = 10;
  // With validation data (spec.data.validation): the validation loss every this many steps (0:
  // none by steps) and after the last step.
  int64_t eval_every = 0;

  // Checkpoints: written under checkpoint_root every checkpoint_every_steps steps (0: not by
  // steps) and when checkpoint_every has passed since the last (zero: not by time); training
  // resumes from resume_from when its step is above 0. Rank 0 writes the final weights to
  // weights_path.
  std::string checkpoint_root;
  int64_t checkpoint_every_steps = 0;
  absl::Duration checkpoint_every = absl::ZeroDuration();
  v1::CheckpointManifest resume_from;
  std::string weights_path;
  // Set instead of resume_from after a failure under training.recovery "live": the state comes
  // from a surviving rank's memory (live_state.h).
  std::optional<LiveSource> live_from;

  // Gradient synchronisation: the reducer's buckets, wire type, ignored parameters and timeout;
  // the communicator's timeout (rendezvous, every collective, the layout check) and whether Gloo
  // may all-reduce through shared memory.
  ddp::ReducerOptions reducer;
  absl::Duration comm_timeout = absl::Minutes(5);
  bool shared_memory = true;

  // The sampler's configuration for a dataset of num_samples.
  ddp::ShardConfig Shard(int64_t num_samples) const;
  // The learning-rate schedule of a run of total_steps steps.
  nn::LrSchedule Schedule(int64_t total_steps) const;
};

// Reads `assignment` (its spec with defaults filled, its placement). INVALID_ARGUMENT naming the
// field when a choice is not one the spec allows or the plan cannot be made (a spec that skipped
// validation).
absl::StatusOr<TrainConfig> TrainConfigFromAssignment(const v1::Assignment& assignment);

}  // namespace gradsync::train

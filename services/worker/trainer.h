// One rank's part of a generation: model init and broadcast, the data-parallel training loop,
// and the final digest and weights. Plain types in, a status out; no RPC here.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "activity.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/ddp/sampler.h"
#include "gradsync/v1/coordinator.pb.h"
#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/metrics.pb.h"
#include "replica.h"

namespace gradsync::worker {

struct TrainOutcome {
  std::string param_digest;
  v1::JobResult result;
};

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
  // trainer clears it once it has. All ranks agree on the step through the per-step all-reduce.
  std::atomic<bool>* checkpoint_requested = nullptr;
  // Called by every rank after writing its part of a checkpoint.
  std::function<void(const v1::ReportCheckpointRequest&)> on_checkpoint;
  // Called by every rank as each step begins (for the heartbeat's account of where it is).
  std::function<void(const StepMarker&)> on_step_begin;
  // Called by every rank after each optimizer step with the samples it trained on, by micro-step
  // (padding included), and the data position the step started at: for data audits.
  std::function<void(int64_t step, const ddp::Position& from, const ddp::StepShard& shard)> on_samples;
};

// Trains `replica` (built for `assignment` by CreateReplica) to the end of the job or until
// aborted; every rank of the generation calls it.
absl::StatusOr<TrainOutcome> Train(const v1::Assignment& assignment, Replica& replica, const TrainHooks& hooks);

}  // namespace gradsync::worker

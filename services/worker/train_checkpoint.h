// A rank's side of checkpoints: writing its part at a step boundary and restoring from a
// committed checkpoint. Plain types in, statuses out.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "gradsync/ddp/sampler.h"
#include "gradsync/v1/coordinator.pb.h"
#include "replica.h"
#include "train_config.h"

namespace gradsync::worker {

// Where training stands: steps done and the data position of the next step.
struct TrainPosition {
  int64_t step = 0;
  ddp::Position data;
  double initial_loss = 0;
};

// Writes this rank's part under <config.checkpoint_root>/step-<step> and returns the report for
// the coordinator.
absl::StatusOr<v1::ReportCheckpointRequest> WriteCheckpoint(const TrainConfig& config, Replica& replica,
                                                            const TrainPosition& at);

// Restores parameters, optimizer state and position from `manifest`. A rank beyond the saved world
// size reads rank 0's part (replicas hold the same parameters and optimizer state). DATA_LOSS naming
// the file when a part is corrupt.
absl::StatusOr<TrainPosition> RestoreCheckpoint(const v1::CheckpointManifest& manifest, int rank, Replica& replica);

}  // namespace gradsync::worker

// A rank's side of checkpoints: writing its part at a step boundary and restoring from a
// committed checkpoint. Plain types in, statuses out.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "gradsync/ddp/sampler.h"
#include "gradsync/train/replica.h"
#include "gradsync/train/train_config.h"
#include "gradsync/v1/coordinator.pb.h"

namespace gradsync::train {

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

// Restores parameters, optimizer state and position from `manifest`, reading only the range of the
// state this rank keeps (Replica::StateRange) from whichever parts hold it, whatever world size
// wrote them; where the mode keeps whole parameters the rest are all-gathered, so every rank of
// the generation calls it. Where parts overlap (rank-local parameters) this rank's own part wins;
// a rank beyond the saved world size takes rank 0's. DATA_LOSS naming the file when a part is
// corrupt; FAILED_PRECONDITION when the checkpoint holds another model.
absl::StatusOr<TrainPosition> RestoreCheckpoint(const v1::CheckpointManifest& manifest, int rank, Replica& replica);

}  // namespace gradsync::train

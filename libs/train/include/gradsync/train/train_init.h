// A new job's starting weights from model.initFrom (gradsync/ckpt/interchange.h): every rank
// reads the same file, then the training loop broadcasts rank 0's parameters as it does after the
// seed's initialisation, so replicas start identical.
#pragma once

#include "absl/status/status.h"
#include "gradsync/train/replica.h"
#include "gradsync/train/train_config.h"

namespace gradsync::train {

// Loads config.model_spec.init_from into the replica: the weights, with a fresh optimizer, or
// with model.initOptimizer also the AdamW moments and step count of a checkpoint directory. The
// path must resolve inside config.init_roots (none given: not checked). INVALID_ARGUMENT naming
// model.initFrom and the tensor on a mismatch with the model, or model.initOptimizer when the
// source holds no optimizer state; the reader's error otherwise.
absl::Status InitFromWeights(const TrainConfig& config, Replica& replica);

}  // namespace gradsync::train

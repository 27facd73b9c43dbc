// training.resumeFrom: a new job that continues another job's run where its newest committed
// checkpoint left it (parameters, AdamW state, step and data position), as a run that outlived its
// job (a cancel, a move to another cluster) goes on. Plain logic on stored jobs, without a server.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::coordinator {

// The checkpoint `next` (normalised, its paths confined) continues from: `previous`'s newest
// committed one. INVALID_ARGUMENT naming training.resumeFrom when `previous` is a script job (a
// script continues its own run with gradsync.torch.load), has not ended (a running job's
// retention could delete the checkpoint being read), has no committed checkpoint, or when the two
// specs differ in the model (its device and precision aside), the data (its validation set aside)
// or the batch shape (training.microBatch, gradAccumSteps, seed): the message names the first field
// that differs, in the spec's JSON names.
absl::StatusOr<v1::CheckpointManifest> ContinuationPoint(const v1::JobSpec& next, const v1::Job& previous);

// "model.transformer.layers": the first field, in JSON names under `prefix`, where `a` and `b` (of
// one type) differ; "" when they are equal. A repeated field is named whole ("data.shards.paths").
std::string FirstDifference(const google::protobuf::Message& a, const google::protobuf::Message& b,
                            const std::string& prefix);

}  // namespace gradsync::coordinator

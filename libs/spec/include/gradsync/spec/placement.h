// Placement: where each rank of a generation computes and how its ranks exchange gradients,
// resolved once by the coordinator from the spec's choices and the devices the gang's workers
// registered, so that every rank of the generation agrees.
//
//   model.device  "cpu": every rank on its CPU.
//                 "cuda": every rank on its worker's GPU; a worker without one fails the placement.
//                 "auto": every rank on its GPU if every worker of the gang has one and the
//                 model has a GPU implementation (the transformer presets), else every rank on
//                 its CPU. Never a mix: the replicas must compute the same function, or their
//                 parameters drift apart by rounding and the digests at the end disagree.
//   ddp.backend   "nccl": needs every rank on a GPU of its own (distinct GPU UUIDs, or host and
//                 GPU index for a worker that registered no UUID: NCCL refuses two ranks on one
//                 GPU).
//                 "auto": NCCL when that holds, else Gloo (GPU ranks then stage gradients through
//                 pinned host buffers, so ranks may share a GPU).
//                 "gloo": Gloo.
//   model.precision  "auto": bf16 on a GPU, fp32 on a CPU.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/nn/model_plan.h"
#include "gradsync/v1/coordinator.pb.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::spec {

struct RankHost {
  std::string worker_id;
  std::string hostname;
  v1::Device device;
};

// One Placement per rank, in rank order, for `spec` and its model's plan (spec::PlanModel). FAILED_PRECONDITION naming
// the spec field and the worker when the gang cannot run what the spec asks for; INVALID_ARGUMENT naming the field for
// a choice the spec's validation would have refused (a spec that never went through it).
absl::StatusOr<std::vector<v1::Placement>> PlaceRanks(const v1::JobSpec& spec, const nn::ModelPlan& plan,
                                                      const std::vector<RankHost>& ranks);

// The same for a script job (JobSpec.script), whose script chooses its own device and precision:
// "cuda" when every worker of the gang has a GPU (the script may use it; CUDA_VISIBLE_DEVICES is
// left alone), else "cpu"; precision "fp32" (nominal: the script decides); the backend of
// gradsync.torch's exchange from ddp.backend as above.
absl::StatusOr<std::vector<v1::Placement>> PlaceScriptRanks(const v1::JobSpec& spec,
                                                            const std::vector<RankHost>& ranks);

}  // namespace gradsync::spec

// CreateCudaReplica in a build without CUDA: a GPU placement is refused by name.
#include "absl/strings/str_cat.h"
#include "gradsync/train/replica.h"

namespace gradsync::train::internal {

absl::StatusOr<std::unique_ptr<Replica>> CreateCudaReplica(const TrainConfig& c, const ReplicaOptions&) {
  return absl::FailedPreconditionError(
      absl::StrCat("placement: rank ", c.rank, " is placed on a GPU and this worker was built without CUDA"));
}

}  // namespace gradsync::train::internal

#include "gpu_rank.h"

namespace gradsync::bench {

absl::StatusOr<std::unique_ptr<GpuRank>> ConnectGpuRank(RankEnv&, const std::string&, int) {
  return absl::FailedPreconditionError("--device: cuda (and --backend nccl) need a build with CUDA; this one has none");
}

}  // namespace gradsync::bench

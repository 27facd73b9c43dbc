#include "model_bench_gpu.h"

namespace gradsync::bench {

absl::StatusOr<GpuModelBench> RunGpuModelBench(const nn::ModelPlan&, const nn::Batch&, int64_t, int, bool,
                                               const std::string&, int, int) {
  return absl::FailedPreconditionError("--device: cuda needs a build with CUDA; this one has none");
}

}  // namespace gradsync::bench

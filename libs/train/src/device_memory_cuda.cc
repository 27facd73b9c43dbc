// DeviceBytesInUse in CUDA builds (memory_meter.h).
#include <cuda_runtime_api.h>

#include "gradsync/kernels/cuda/cuda_check.h"
#include "gradsync/train/memory_meter.h"

namespace gradsync::train {

absl::StatusOr<int64_t> DeviceBytesInUse() {
  size_t free = 0, total = 0;
  if (absl::Status s = kernels::cuda::CudaStatus(cudaMemGetInfo(&free, &total), "cudaMemGetInfo"); !s.ok()) return s;
  return static_cast<int64_t>(total - free);
}

}  // namespace gradsync::train

// DeviceBytesInUse in a build without CUDA (memory_meter.h): there is no device to ask.
#include "gradsync/train/memory_meter.h"

namespace gradsync::train {

absl::StatusOr<int64_t> DeviceBytesInUse() {
  return absl::FailedPreconditionError("device memory: this worker was built without CUDA");
}

}  // namespace gradsync::train

// What compute this process can use: the CPU, or CUDA GPUs when the build has CUDA and a driver
// and device are present.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/device/device_request.h"
#include "gradsync/v1/coordinator.pb.h"

namespace gradsync::device {

struct GpuInfo {
  // The CUDA ordinal in this process (relative to CUDA_VISIBLE_DEVICES).
  int index = 0;
  std::string name;
  size_t memory_bytes = 0;
  // "GPU-xxxxxxxx-...", the same on every host and process (see gpu_identity.h).
  std::string uuid;
};

// True when this binary was built with the CUDA targets.
bool BuiltWithCuda();

// The GPUs visible to this process; empty when there is no driver, no device, or no CUDA in the
// build (any CUDA error counts as "no GPU").
std::vector<GpuInfo> ListGpus();

// The device of this host a request names: auto the first GPU if any, else the CPU; cuda the
// first GPU; cuda:N the GPU of ordinal N. A GPU comes with its ordinal and its UUID.
// FAILED_PRECONDITION when a GPU is asked for and not present.
absl::StatusOr<v1::Device> ResolveDevice(const DeviceRequest& request);

}  // namespace gradsync::device

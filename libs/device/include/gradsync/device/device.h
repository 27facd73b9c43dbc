// What compute this process can use: the CPU, or CUDA GPUs when the build has CUDA and a driver
// and device are present.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/v1/coordinator.pb.h"

namespace gradsync::device {

struct GpuInfo {
  int index = 0;
  std::string name;
  size_t memory_bytes = 0;
};

// True when this binary was built with the CUDA targets.
bool BuiltWithCuda();

// The GPUs visible to this process; empty when there is no driver, no device, or no CUDA in the
// build (any CUDA error counts as "no GPU").
std::vector<GpuInfo> ListGpus();

// Resolves a device request: "auto" (the first GPU if any, else the CPU), "cpu", "cuda" or
// "cuda:N". INVALID_ARGUMENT for other text; FAILED_PRECONDITION when a GPU is asked for and not
// present.
absl::StatusOr<v1::Device> ResolveDevice(const std::string& request);

}  // namespace gradsync::device

#include <cuda_runtime_api.h>

#include "gradsync/device/device.h"

namespace gradsync::device {

bool BuiltWithCuda() { return true; }

std::vector<GpuInfo> ListGpus() {
  int count = 0;
  // Without a driver this fails ("driver version is insufficient"): that means no GPU.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  std::vector<GpuInfo> out;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    out.push_back({i, prop.name, prop.totalGlobalMem});
  }
  return out;
}

}  // namespace gradsync::device

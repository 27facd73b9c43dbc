#include <cuda_runtime_api.h>

#include <span>

#include "gradsync/device/device.h"
#include "gradsync/device/gpu_identity.h"

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
    static_assert(sizeof(prop.uuid.bytes) == kGpuUuidBytes);
    const std::span<const unsigned char, kGpuUuidBytes> uuid(reinterpret_cast<const unsigned char*>(prop.uuid.bytes),
                                                             kGpuUuidBytes);
    out.push_back({i, prop.name, prop.totalGlobalMem, FormatGpuUuid(uuid)});
  }
  return out;
}

}  // namespace gradsync::device

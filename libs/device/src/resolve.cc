#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gradsync/device/device.h"

namespace gradsync::device {

absl::StatusOr<v1::Device> ResolveDevice(const DeviceRequest& request) {
  using Kind = DeviceRequest::Kind;
  v1::Device d;
  const std::vector<GpuInfo> gpus = request.kind == Kind::kCpu ? std::vector<GpuInfo>{} : ListGpus();
  if (request.kind == Kind::kCpu || (request.kind == Kind::kAuto && gpus.empty())) {
    d.set_kind(v1::Device::CPU);
    d.set_description(absl::StrCat("cpu (", std::thread::hardware_concurrency(), " threads)"));
    return d;
  }
  const int index = std::max(request.ordinal, 0);
  if (index >= static_cast<int>(gpus.size())) {
    return absl::FailedPreconditionError(absl::StrCat("device: ", request.ToString(), " asked for, but ", gpus.size(),
                                                      " GPUs are visible",
                                                      BuiltWithCuda() ? "" : " (this build has no CUDA)"));
  }
  d.set_kind(v1::Device::CUDA);
  d.set_gpu_index(index);
  d.set_gpu_uuid(gpus[index].uuid);
  d.set_description(absl::StrCat(gpus[index].name, " (cuda:", index, ")"));
  return d;
}

}  // namespace gradsync::device

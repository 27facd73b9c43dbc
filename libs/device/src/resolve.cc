#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gradsync/device/device.h"

namespace gradsync::device {

absl::StatusOr<v1::Device> ResolveDevice(const std::string& request) {
  v1::Device d;
  const std::vector<GpuInfo> gpus = (request == "cpu") ? std::vector<GpuInfo>{} : ListGpus();
  if (request == "cpu" || (request == "auto" && gpus.empty())) {
    d.set_kind(v1::Device::CPU);
    d.set_description(absl::StrCat("cpu (", std::thread::hardware_concurrency(), " threads)"));
    return d;
  }
  int index = 0;
  if (request != "auto" && request != "cuda") {
    if (!absl::StartsWith(request, "cuda:") || !absl::SimpleAtoi(request.substr(5), &index) || index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("device: expected auto, cpu, cuda or cuda:N, got \"", request, "\""));
    }
  }
  if (index >= static_cast<int>(gpus.size())) {
    return absl::FailedPreconditionError(absl::StrCat("device: ", request, " asked for, but ", gpus.size(),
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

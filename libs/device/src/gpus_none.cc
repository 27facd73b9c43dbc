#include "gradsync/device/device.h"

namespace gradsync::device {

bool BuiltWithCuda() { return false; }

std::vector<GpuInfo> ListGpus() { return {}; }

}  // namespace gradsync::device

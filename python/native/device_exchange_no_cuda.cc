#include "device_exchange.h"

namespace gradsync::python {

absl::StatusOr<DeviceCommunicator> ConnectDevice(comm::KvClient*, int, int, const DeviceExchangeOptions& options) {
  return absl::FailedPreconditionError(
      "gradsync's exchange over GPU memory needs a CUDA build of gradsync; this one is CPU only (cuda:" +
      std::to_string(options.device) + ")");
}

}  // namespace gradsync::python

#include <cuda_runtime.h>

#include "absl/strings/str_cat.h"
#include "device_exchange.h"
#include "gradsync/comm/nccl.h"

namespace gradsync::python {

absl::StatusOr<DeviceCommunicator> ConnectDevice(comm::KvClient* kv, int rank, int world,
                                                 const DeviceExchangeOptions& options) {
  if (const cudaError_t e = cudaSetDevice(options.device); e != cudaSuccess) {
    return absl::FailedPreconditionError(absl::StrCat("cuda:", options.device, ": ", cudaGetErrorString(e)));
  }
  const auto stream = reinterpret_cast<cudaStream_t>(options.stream);
  DeviceCommunicator out;
  if (options.backend == "nccl") {
    comm::NcclOptions nccl;
    nccl.device = options.device;
    nccl.compute_stream = stream;
    nccl.timeout = options.timeout;
    absl::StatusOr<std::unique_ptr<comm::Communicator>> c = comm::ConnectNccl(kv, rank, world, nccl);
    if (!c.ok()) return c.status();
    out.device = *std::move(c);
    return out;
  }
  comm::GlooOptions gloo;
  gloo.hostname = options.host;
  gloo.timeout = options.timeout;
  gloo.shared_memory = options.shared_memory;
  absl::StatusOr<std::unique_ptr<comm::Communicator>> host = comm::ConnectGloo(kv, rank, world, gloo);
  if (!host.ok()) return host.status();
  out.host = *std::move(host);
  out.device = comm::StageThroughHost(out.host.get(), options.device, stream);
  return out;
}

}  // namespace gradsync::python

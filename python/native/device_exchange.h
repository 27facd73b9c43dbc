// The exchange's communicator over a GPU's memory: NCCL when the generation's placement says so
// (every rank on a GPU of its own), else Gloo staged through pinned host memory (ranks sharing a
// GPU). Built with CUDA only (device_exchange_cuda.cc); without it, FAILED_PRECONDITION.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/comm/kv_client.h"

namespace gradsync::python {

struct DeviceExchangeOptions {
  int device = 0;
  // The CUDA stream (cudaStream_t, as torch.cuda.Stream.cuda_stream gives it) whose queued work a
  // collective waits for: the stream backward runs on.
  uintptr_t stream = 0;
  // "nccl" or "gloo" (the placement's backend).
  std::string backend = "nccl";
  std::string host = "127.0.0.1";
  absl::Duration timeout = absl::Minutes(5);
  bool shared_memory = true;
};

// The communicator, and for staging the host communicator under it (which must outlive it).
struct DeviceCommunicator {
  std::unique_ptr<comm::Communicator> host;
  std::unique_ptr<comm::Communicator> device;
};

absl::StatusOr<DeviceCommunicator> ConnectDevice(comm::KvClient* kv, int rank, int world,
                                                 const DeviceExchangeOptions& options);

}  // namespace gradsync::python

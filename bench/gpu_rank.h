// A benchmark rank's GPU side: a communicator over device memory (NCCL, or Gloo staged through
// pinned host buffers) and device buffers to reduce. Built with CUDA (gpu_rank_cuda.cc); elsewhere
// (gpu_rank_no_cuda.cc) ConnectGpuRank says the build has no CUDA.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "gradsync/comm/communicator.h"
#include "rank_env.h"

namespace gradsync::bench {

class GpuRank {
 public:
  virtual ~GpuRank() = default;
  virtual comm::Communicator& comm() = 0;
  // `count` floats of device memory (one buffer, grown as needed), set to 1.
  virtual absl::StatusOr<std::span<float>> Buffer(size_t count) = 0;
  // Waits for the device's queued work.
  virtual absl::Status Synchronize() = 0;
};

// Rank env.rank on GPU `device`: "nccl" forms an NCCL communicator through env.kv's coordinator,
// "gloo" stages env.comm's collectives through host memory.
absl::StatusOr<std::unique_ptr<GpuRank>> ConnectGpuRank(RankEnv& env, const std::string& backend, int device);

}  // namespace gradsync::bench

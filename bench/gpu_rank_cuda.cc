#include <cuda_runtime_api.h>

#include <vector>

#include "gpu_rank.h"
#include "gradsync/comm/nccl.h"
#include "gradsync/kernels/cuda/cuda_check.h"
#include "gradsync/kernels/cuda/device_buffer.h"

namespace gradsync::bench {
namespace {

using kernels::cuda::CudaStatus;
using kernels::cuda::DeviceBuffer;

class CudaRank final : public GpuRank {
 public:
  ~CudaRank() override {
    comm_.reset();
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }

  static absl::StatusOr<std::unique_ptr<GpuRank>> Connect(RankEnv& env, const std::string& backend, int device) {
    auto r = std::make_unique<CudaRank>();
    if (absl::Status s = CudaStatus(cudaSetDevice(device), "cudaSetDevice"); !s.ok()) return s;
    if (absl::Status s = CudaStatus(cudaStreamCreateWithFlags(&r->stream_, cudaStreamNonBlocking), "cudaStreamCreate");
        !s.ok()) {
      return s;
    }
    if (backend == "nccl") {
      comm::NcclOptions o;
      o.device = device;
      o.compute_stream = r->stream_;
      o.timeout = absl::Minutes(2);
      auto c = comm::ConnectNccl(env.kv.get(), env.rank, env.ranks, o);
      if (!c.ok()) return c.status();
      r->comm_ = *std::move(c);
    } else {
      r->comm_ = comm::StageThroughHost(env.comm.get(), device, r->stream_);
    }
    return r;
  }

  comm::Communicator& comm() override { return *comm_; }

  absl::StatusOr<std::span<float>> Buffer(size_t count) override {
    if (count > buffer_.size()) {
      auto b = DeviceBuffer<float>::FromHost(std::vector<float>(count, 1.0f));
      if (!b.ok()) return b.status();
      buffer_ = *std::move(b);
    }
    return std::span<float>(buffer_.data(), count);
  }

  absl::Status Synchronize() override { return CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

 private:
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<comm::Communicator> comm_;
  DeviceBuffer<float> buffer_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<GpuRank>> ConnectGpuRank(RankEnv& env, const std::string& backend, int device) {
  return CudaRank::Connect(env, backend, device);
}

}  // namespace gradsync::bench

// GPU memory over a host communicator (see gradsync/comm/nccl.h): each collective waits for the
// compute stream, copies its device buffers into pinned host memory, runs the host collective
// there and copies the result back. Operations run one at a time on this wrapper's own thread,
// so one growing pinned buffer per direction serves them all.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

#include "absl/strings/str_cat.h"
#include "gradsync/comm/nccl.h"
#include "work_queue.h"

namespace gradsync::comm {
namespace {

class PinnedBuffer {
 public:
  ~PinnedBuffer() { cudaFreeHost(ptr_); }
  float* Reserve(size_t n) {
    if (n > capacity_) {
      cudaFreeHost(ptr_);
      ptr_ = nullptr;
      capacity_ = 0;
      if (cudaMallocHost(reinterpret_cast<void**>(&ptr_), std::max<size_t>(n, 1) * sizeof(float)) != cudaSuccess) {
        return nullptr;
      }
      capacity_ = n;
    }
    return ptr_;
  }

 private:
  float* ptr_ = nullptr;
  size_t capacity_ = 0;
};

absl::Status Cuda(cudaError_t e, const char* what) {
  return e == cudaSuccess ? absl::OkStatus() : absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(e)));
}

class StagedCommunicator : public Communicator {
 public:
  StagedCommunicator(Communicator* host, int device, cudaStream_t stream)
      : host_(host), device_(device), stream_(stream) {}

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  int64_t sequence() const override { return host_->sequence(); }
  int64_t completed() const override { return host_->completed(); }
  std::string backend() const override { return absl::StrCat(host_->backend(), " (staged through host memory)"); }

  std::shared_ptr<Work> AllReduce(std::span<float> data, ReduceOp op, WireType wire) override {
    return Run(data, data, [=, this](std::span<float> in, std::span<float>) {
      return host_->AllReduce(in, op, wire)->Wait();
    });
  }
  // Host memory already: no staging.
  std::shared_ptr<Work> AllReduce(std::span<double> data, ReduceOp op) override { return host_->AllReduce(data, op); }
  std::shared_ptr<Work> Broadcast(std::span<float> data, int root) override {
    return Run(data, data, [=, this](std::span<float> in, std::span<float>) { return host_->Broadcast(in, root)->Wait(); });
  }
  std::shared_ptr<Work> AllGather(std::span<const float> in, std::span<float> out) override {
    return Run(in, out, [this](std::span<float> i, std::span<float> o) { return host_->AllGather(i, o)->Wait(); });
  }
  std::shared_ptr<Work> ReduceScatter(std::span<const float> in, std::span<float> out) override {
    return Run(in, out, [this](std::span<float> i, std::span<float> o) { return host_->ReduceScatter(i, o)->Wait(); });
  }
  std::shared_ptr<Work> Barrier() override { return host_->Barrier(); }
  void Abort() override { host_->Abort(); }

 private:
  // Device `in` -> pinned host, `collective` on host buffers, pinned host -> device `out`.
  std::shared_ptr<Work> Run(std::span<const float> in, std::span<float> out,
                            std::function<absl::Status(std::span<float>, std::span<float>)> collective) {
    return queue_.Submit([=, this]() -> absl::Status {
      if (absl::Status s = Cuda(cudaSetDevice(device_), "staging: set device"); !s.ok()) return s;
      float* host_in = in_.Reserve(in.size());
      float* host_out = in.data() == out.data() ? host_in : out_.Reserve(out.size());
      if (host_in == nullptr || host_out == nullptr) return absl::ResourceExhaustedError("staging: no pinned host memory");
      // The copy is ordered after the compute stream's work, so it reads finished gradients.
      absl::Status s = Cuda(cudaMemcpyAsync(host_in, in.data(), in.size_bytes(), cudaMemcpyDeviceToHost, stream_),
                            "staging: device to host");
      if (s.ok()) s = Cuda(cudaStreamSynchronize(stream_), "staging: device to host");
      if (s.ok()) s = collective(std::span<float>(host_in, in.size()), std::span<float>(host_out, out.size()));
      if (s.ok()) {
        s = Cuda(cudaMemcpyAsync(out.data(), host_out, out.size_bytes(), cudaMemcpyHostToDevice, stream_),
                 "staging: host to device");
      }
      if (s.ok()) s = Cuda(cudaStreamSynchronize(stream_), "staging: host to device");
      return s;
    });
  }

  Communicator* const host_;
  const int device_;
  const cudaStream_t stream_;
  PinnedBuffer in_;
  PinnedBuffer out_;
  // Declared last: destroyed first, so queued operations finish while the rest lives.
  WorkQueue queue_;
};

}  // namespace

std::unique_ptr<Communicator> StageThroughHost(Communicator* host, int device, cudaStream_t stream) {
  return std::make_unique<StagedCommunicator>(host, device, stream);
}

}  // namespace gradsync::comm

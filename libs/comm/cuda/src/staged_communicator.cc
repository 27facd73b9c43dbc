// GPU memory over a host communicator (see gradsync/comm/nccl.h): each collective waits for the
// work queued on the compute stream when it was issued (an event), copies its device buffers into
// pinned host memory on a staging stream of its own, runs the host collective there and copies the
// result back. Backward goes on on the compute stream meanwhile: a bucket's copies wait for the
// kernels that produced its gradients, not for the ones queued after. Operations run one at a time
// on this wrapper's own thread, in issue order (the host collectives included that need no
// staging, so every rank issues the host communicator's collectives in the same order), and one
// growing pinned buffer per direction serves them all. The block collectives of sharded data
// parallel stage only what they need: a reduce-scatter brings back this rank's block alone, and an
// all-gather sends only this rank's block to the host.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gradsync/comm/nccl.h"
#include "gradsync/kernels/cuda/cuda_check.h"
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

using kernels::cuda::CudaStatus;

// One CUDA event, recorded on a stream at construction.
class Recorded {
 public:
  Recorded(const Recorded&) = delete;
  Recorded& operator=(const Recorded&) = delete;
  ~Recorded() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  static absl::StatusOr<std::shared_ptr<Recorded>> On(cudaStream_t stream) {
    std::shared_ptr<Recorded> r(new Recorded);
    if (absl::Status s = CudaStatus(cudaEventCreateWithFlags(&r->event_, cudaEventDisableTiming), "staging: event");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CudaStatus(cudaEventRecord(r->event_, stream), "staging: record the compute stream");
        !s.ok()) {
      return s;
    }
    return r;
  }
  cudaEvent_t get() const { return event_; }

 private:
  Recorded() = default;
  cudaEvent_t event_ = nullptr;
};

class StagedCommunicator : public Communicator {
 public:
  StagedCommunicator(Communicator* host, int device, cudaStream_t stream)
      : host_(host), device_(device), stream_(stream) {
    if (CudaStatus(cudaSetDevice(device_), "staging: set device").ok()) {
      setup_ = CudaStatus(cudaStreamCreateWithFlags(&staging_, cudaStreamNonBlocking), "staging: stream");
    } else {
      setup_ = absl::InternalError(absl::StrCat("staging: cannot use GPU ", device_));
    }
  }
  ~StagedCommunicator() override {
    queue_.reset();  // finishes what is queued while the stream and buffers live
    if (staging_ != nullptr) cudaStreamDestroy(staging_);
  }

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  int64_t sequence() const override { return issued_.load(); }
  int64_t completed() const override { return done_.load(); }
  std::string backend() const override { return absl::StrCat(host_->backend(), " (staged through host memory)"); }

  std::shared_ptr<Work> AllReduce(std::span<float> data, ReduceOp op, WireType wire) override {
    return Run(data, data,
               [=, this](std::span<float> in, std::span<float>) { return host_->AllReduce(in, op, wire)->Wait(); });
  }
  // Host memory already: no staging, but queued like the rest, so issue order is kept.
  std::shared_ptr<Work> AllReduce(std::span<double> data, ReduceOp op) override {
    return Enqueue([=, this] { return host_->AllReduce(data, op)->Wait(); });
  }
  std::shared_ptr<Work> Broadcast(std::span<float> data, int root) override {
    return Run(data, data,
               [=, this](std::span<float> in, std::span<float>) { return host_->Broadcast(in, root)->Wait(); });
  }
  std::shared_ptr<Work> AllGather(std::span<const float> in, std::span<float> out) override {
    return Run(in, out, [this](std::span<float> i, std::span<float> o) { return host_->AllGather(i, o)->Wait(); });
  }
  std::shared_ptr<Work> ReduceScatter(std::span<const float> in, std::span<float> out) override {
    return Run(in, out, [this](std::span<float> i, std::span<float> o) { return host_->ReduceScatter(i, o)->Wait(); });
  }
  // One staged host collective for all the blocks: the whole buffer goes to the host and only
  // this rank's reduced block comes back.
  std::shared_ptr<Work> ReduceScatterBlocks(std::span<float> data, std::span<const int64_t> bounds) override {
    if (absl::Status s = CheckBounds(bounds, static_cast<int64_t>(data.size()), size(), "reducescatter"); !s.ok()) {
      return CompletedWork(s);
    }
    std::vector<int64_t> b(bounds.begin(), bounds.end());
    const Range all{0, static_cast<int64_t>(data.size())}, mine{b[rank()], b[rank() + 1]};
    return RunInPlace(data, all, mine,
                      [this, b](std::span<float> host) { return host_->ReduceScatterBlocks(host, b)->Wait(); });
  }
  // Only this rank's block goes to the host; the gathered buffer comes back whole.
  std::shared_ptr<Work> AllGatherBlocks(std::span<float> data, std::span<const int64_t> bounds) override {
    if (absl::Status s = CheckBounds(bounds, static_cast<int64_t>(data.size()), size(), "allgather"); !s.ok()) {
      return CompletedWork(s);
    }
    std::vector<int64_t> b(bounds.begin(), bounds.end());
    const Range all{0, static_cast<int64_t>(data.size())}, mine{b[rank()], b[rank() + 1]};
    return RunInPlace(data, mine, all,
                      [this, b](std::span<float> host) { return host_->AllGatherBlocks(host, b)->Wait(); });
  }
  std::shared_ptr<Work> Barrier() override {
    return Enqueue([this] { return host_->Barrier()->Wait(); });
  }
  void Abort() override { host_->Abort(); }

 private:
  std::shared_ptr<Work> Enqueue(std::function<absl::Status()> op) {
    issued_.fetch_add(1);
    return queue_->Submit([this, op = std::move(op)] {
      absl::Status s = op();
      done_.fetch_add(1);
      return s;
    });
  }

  // Device `in` -> pinned host, `collective` on host buffers, pinned host -> device `out`. Called
  // on the thread that queued the compute work `in` depends on, with the device current.
  std::shared_ptr<Work> Run(std::span<const float> in, std::span<float> out,
                            std::function<absl::Status(std::span<float>, std::span<float>)> collective) {
    absl::StatusOr<std::shared_ptr<Recorded>> ready =
        setup_.ok() ? Recorded::On(stream_) : absl::StatusOr<std::shared_ptr<Recorded>>(setup_);
    return Enqueue([=, this]() -> absl::Status {
      if (!ready.ok()) return ready.status();
      if (absl::Status s = CudaStatus(cudaSetDevice(device_), "staging: set device"); !s.ok()) return s;
      float* host_in = in_.Reserve(in.size());
      float* host_out = in.data() == out.data() ? host_in : out_.Reserve(out.size());
      if (host_in == nullptr || host_out == nullptr)
        return absl::ResourceExhaustedError("staging: no pinned host memory");
      // Ordered after the compute work queued before this collective was issued, so it reads
      // finished gradients while later kernels keep running.
      absl::Status s =
          CudaStatus(cudaStreamWaitEvent(staging_, (*ready)->get(), 0), "staging: wait for the compute stream");
      if (s.ok()) {
        s = CudaStatus(cudaMemcpyAsync(host_in, in.data(), in.size_bytes(), cudaMemcpyDeviceToHost, staging_),
                       "staging: device to host");
      }
      if (s.ok()) s = CudaStatus(cudaStreamSynchronize(staging_), "staging: device to host");
      if (s.ok()) s = collective(std::span<float>(host_in, in.size()), std::span<float>(host_out, out.size()));
      if (s.ok()) {
        s = CudaStatus(cudaMemcpyAsync(out.data(), host_out, out.size_bytes(), cudaMemcpyHostToDevice, staging_),
                       "staging: host to device");
      }
      // Wait() returns after this: compute work queued after it sees the result.
      if (s.ok()) s = CudaStatus(cudaStreamSynchronize(staging_), "staging: host to device");
      return s;
    });
  }

  // Elements [begin, end) of a buffer.
  struct Range {
    int64_t begin;
    int64_t end;
  };

  // In place over one pinned host buffer as large as `data`: device `to_host` -> host,
  // `collective` on the whole host buffer, host `to_device` -> device.
  std::shared_ptr<Work> RunInPlace(std::span<float> data, Range to_host, Range to_device,
                                   std::function<absl::Status(std::span<float>)> collective) {
    absl::StatusOr<std::shared_ptr<Recorded>> ready =
        setup_.ok() ? Recorded::On(stream_) : absl::StatusOr<std::shared_ptr<Recorded>>(setup_);
    return Enqueue([=, this]() -> absl::Status {
      if (!ready.ok()) return ready.status();
      if (absl::Status s = CudaStatus(cudaSetDevice(device_), "staging: set device"); !s.ok()) return s;
      float* host = in_.Reserve(data.size());
      if (host == nullptr) return absl::ResourceExhaustedError("staging: no pinned host memory");
      const auto bytes = [](Range r) { return static_cast<size_t>(r.end - r.begin) * sizeof(float); };
      absl::Status s =
          CudaStatus(cudaStreamWaitEvent(staging_, (*ready)->get(), 0), "staging: wait for the compute stream");
      if (s.ok()) {
        s = CudaStatus(cudaMemcpyAsync(host + to_host.begin, data.data() + to_host.begin, bytes(to_host),
                                       cudaMemcpyDeviceToHost, staging_),
                       "staging: device to host");
      }
      if (s.ok()) s = CudaStatus(cudaStreamSynchronize(staging_), "staging: device to host");
      if (s.ok()) s = collective(std::span<float>(host, data.size()));
      if (s.ok()) {
        s = CudaStatus(cudaMemcpyAsync(data.data() + to_device.begin, host + to_device.begin, bytes(to_device),
                                       cudaMemcpyHostToDevice, staging_),
                       "staging: host to device");
      }
      if (s.ok()) s = CudaStatus(cudaStreamSynchronize(staging_), "staging: host to device");
      return s;
    });
  }

  Communicator* const host_;
  const int device_;
  const cudaStream_t stream_;
  cudaStream_t staging_ = nullptr;
  absl::Status setup_;
  std::atomic<int64_t> issued_{0};
  std::atomic<int64_t> done_{0};
  PinnedBuffer in_;
  PinnedBuffer out_;
  std::unique_ptr<WorkQueue> queue_ = std::make_unique<WorkQueue>();
};

}  // namespace

std::unique_ptr<Communicator> StageThroughHost(Communicator* host, int device, cudaStream_t stream) {
  return std::make_unique<StagedCommunicator>(host, device, stream);
}

}  // namespace gradsync::comm

// The NCCL backend (see gradsync/comm/nccl.h for the contract).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bf16_cast.h"
#include "gradsync/comm/nccl.h"
#include "gradsync/kernels/cuda/cuda_check.h"
#include "work_queue.h"

namespace gradsync::comm {
namespace {

constexpr char kUniqueIdKey[] = "nccl/unique-id";

using kernels::cuda::CudaStatus;

// The communicator's handle and the lock that keeps it valid: ncclCommAbort frees it, so every
// other use happens under the reader lock and only Abort() takes the writer lock.
struct Shared {
  ncclComm_t comm = nullptr;
  int device = 0;
  absl::Duration timeout;
  absl::Mutex mu;
  std::atomic<bool> aborted{false};
  std::string abort_reason ABSL_GUARDED_BY(mu);

  void Abort(const std::string& reason) {
    absl::MutexLock lock(&mu);
    if (aborted.exchange(true)) return;
    abort_reason = reason;
    cudaSetDevice(device);
    ncclCommAbort(comm);
  }

  // The communicator's asynchronous state: ncclSuccess, ncclInProgress, or the error.
  ncclResult_t AsyncState() {
    absl::ReaderMutexLock lock(&mu);
    if (aborted.load()) return ncclInvalidUsage;
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInternalError;
    return state;
  }

  std::string Describe(ncclResult_t r) {
    absl::ReaderMutexLock lock(&mu);
    std::string detail = aborted.load() ? abort_reason : std::string(ncclGetLastError(comm));
    return absl::StrCat(ncclGetErrorString(r), detail.empty() ? "" : ": ", detail);
  }

  // Polls until a non-blocking call settles; aborts past the timeout.
  absl::Status Settle(const std::string& what, absl::Time started) {
    absl::Duration nap = absl::Microseconds(20);
    for (;;) {
      const ncclResult_t state = AsyncState();
      if (state == ncclSuccess) return absl::OkStatus();
      if (aborted.load()) return absl::AbortedError(absl::StrCat(what, ": the generation was aborted"));
      if (state != ncclInProgress) return absl::UnavailableError(absl::StrCat(what, " failed: ", Describe(state)));
      if (absl::Now() - started > timeout) {
        Abort(absl::StrCat(what, " did not complete within ", absl::FormatDuration(timeout)));
        return absl::DeadlineExceededError(absl::StrCat(
            what, " did not complete within ", absl::FormatDuration(timeout), "; the communicator was aborted"));
      }
      absl::SleepFor(nap);
      nap = std::min(nap * 2, absl::Milliseconds(1));
    }
  }
};

// One collective in flight: the events around it on the communication stream, and what to do on
// the host once it completed (copy staged scalars back). The host issues far ahead of the GPU, so
// the collective's duration comes from the events: `begin` completes when the stream reaches the
// collective (after the compute it waits for), `done` when the collective ends.
class NcclWork : public Work {
 public:
  NcclWork(std::shared_ptr<Shared> shared, std::string what, cudaEvent_t begin, cudaEvent_t done,
           std::function<void()> on_done)
      : shared_(std::move(shared)),
        what_(std::move(what)),
        begin_(begin),
        done_(done),
        on_done_(std::move(on_done)),
        issued_(absl::Now()) {}
  ~NcclWork() override {
    cudaSetDevice(shared_->device);
    cudaEventDestroy(begin_);
    cudaEventDestroy(done_);
  }

  Timing timing() const override {
    absl::MutexLock lock(&mu_);
    return timing_;
  }

  bool Done() const override { return cudaEventQuery(done_) == cudaSuccess; }

  absl::Status Wait(absl::Duration timeout) override {
    const absl::Time deadline = timeout == absl::InfiniteDuration() ? absl::InfiniteFuture() : absl::Now() + timeout;
    absl::Duration nap = absl::Microseconds(10);
    for (;;) {
      const cudaError_t q = cudaEventQuery(done_);
      if (q == cudaSuccess) return Finish();
      if (q != cudaErrorNotReady) return CudaStatus(q, what_);
      if (shared_->aborted.load()) return absl::AbortedError(absl::StrCat(what_, ": the generation was aborted"));
      const ncclResult_t state = shared_->AsyncState();
      if (state != ncclSuccess && state != ncclInProgress) {
        const std::string why = shared_->Describe(state);
        shared_->Abort(absl::StrCat(what_, " failed: ", why));
        return absl::UnavailableError(absl::StrCat(what_, " failed: ", why));
      }
      const absl::Time now = absl::Now();
      if (now - issued_ > shared_->timeout) {
        shared_->Abort(absl::StrCat(what_, " did not complete within ", absl::FormatDuration(shared_->timeout)));
        return absl::DeadlineExceededError(absl::StrCat(what_, " did not complete within ",
                                                        absl::FormatDuration(shared_->timeout),
                                                        "; the communicator was aborted"));
      }
      if (now >= deadline) return absl::DeadlineExceededError(absl::StrCat(what_, " not done within the timeout"));
      absl::SleepFor(nap);
      nap = std::min(nap * 2, absl::Microseconds(500));
    }
  }

 private:
  absl::Status Finish() {
    absl::MutexLock lock(&mu_);
    if (timing_.finished == absl::Time()) {
      timing_.finished = absl::Now();
      float ms = 0.0f;
      if (cudaEventElapsedTime(&ms, begin_, done_) != cudaSuccess) ms = 0.0f;
      timing_.started = timing_.finished - absl::Microseconds(static_cast<int64_t>(ms * 1e3f));
      if (on_done_) on_done_();
    }
    return absl::OkStatus();
  }

  std::shared_ptr<Shared> shared_;
  const std::string what_;
  const cudaEvent_t begin_, done_;
  std::function<void()> on_done_;
  const absl::Time issued_;
  mutable absl::Mutex mu_;
  Timing timing_;
};

// A collective as three stream-ordered parts. With a non-blocking communicator, an NCCL call may
// return ncclInProgress before its kernel is on the stream, so `after` is enqueued only once the
// call has settled: otherwise it could run ahead of the collective it depends on.
struct Steps {
  std::function<cudaError_t(cudaStream_t)> before;
  std::function<ncclResult_t(cudaStream_t)> collective;
  std::function<cudaError_t(cudaStream_t)> after;
};

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<Shared> shared, int rank, int size, cudaStream_t comm_stream,
                   cudaStream_t compute_stream, float* barrier_scratch)
      : shared_(std::move(shared)),
        rank_(rank),
        size_(size),
        stream_(comm_stream),
        compute_(compute_stream),
        barrier_(barrier_scratch) {}

  ~NcclCommunicator() override {
    cudaSetDevice(shared_->device);
    // A finished communicator is destroyed; one with work still stuck (a dead peer) is aborted.
    const absl::Time deadline = absl::Now() + std::min(shared_->timeout, absl::Seconds(10));
    while (cudaStreamQuery(stream_) == cudaErrorNotReady && absl::Now() < deadline && !shared_->aborted.load()) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    if (cudaStreamQuery(stream_) == cudaErrorNotReady) shared_->Abort("destroyed with collectives in flight");
    if (!shared_->aborted.load()) ncclCommDestroy(shared_->comm);
    cudaFree(barrier_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int64_t sequence() const override { return sequence_.load(); }
  std::string backend() const override { return "nccl"; }

  // Called from other threads too (the worker's heartbeat): the device is made current first, so
  // querying the events never creates a context on another GPU.
  int64_t completed() const override {
    absl::MutexLock lock(&issue_mu_);
    cudaSetDevice(shared_->device);
    while (!inflight_.empty() && inflight_.front()->Done()) {
      inflight_.pop_front();
      ++completed_;
    }
    return completed_;
  }

  std::shared_ptr<Work> AllReduce(std::span<float> data, ReduceOp op, WireType wire) override {
    const ncclRedOp_t redop = op == ReduceOp::kAverage ? ncclAvg : ncclSum;
    const int64_t n = static_cast<int64_t>(data.size());
    if (wire == WireType::kFloat32) {
      return Issue("allreduce", {nullptr,
                                 [=, this](cudaStream_t s) {
                                   return ncclAllReduce(data.data(), data.data(), n, ncclFloat, redop, shared_->comm,
                                                        s);
                                 },
                                 nullptr});
    }
    // bf16 on the wire: cast into a stream-ordered scratch buffer, reduce it, cast back.
    auto half = std::make_shared<__nv_bfloat16*>(nullptr);
    return Issue(
        "allreduce (bf16)",
        {[=](cudaStream_t s) {
           cudaError_t e =
               cudaMallocAsync(reinterpret_cast<void**>(half.get()), std::max<size_t>(2, n * sizeof(__nv_bfloat16)), s);
           return e != cudaSuccess ? e : CastToBf16(data.data(), *half, n, s);
         },
         [=, this](cudaStream_t s) { return ncclAllReduce(*half, *half, n, ncclBfloat16, redop, shared_->comm, s); },
         [=](cudaStream_t s) {
           const cudaError_t e = CastFromBf16(*half, data.data(), n, 1.0f, s);
           cudaFreeAsync(*half, s);
           return e;
         }});
  }

  // Host doubles (the trainer's scalars): staged through pinned host and device copies.
  std::shared_ptr<Work> AllReduce(std::span<double> data, ReduceOp op) override {
    const ncclRedOp_t redop = op == ReduceOp::kAverage ? ncclAvg : ncclSum;
    const size_t bytes = data.size() * sizeof(double);
    auto pinned = std::make_shared<PinnedDoubles>(data.size());
    if (pinned->ptr == nullptr) return CompletedWork(absl::ResourceExhaustedError("nccl: no pinned host memory"));
    std::copy(data.begin(), data.end(), pinned->ptr);
    auto dev = std::make_shared<double*>(nullptr);
    return Issue("allreduce (host doubles)",
                 {[=](cudaStream_t s) {
                    cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(dev.get()), std::max<size_t>(bytes, 8), s);
                    return e != cudaSuccess ? e : cudaMemcpyAsync(*dev, pinned->ptr, bytes, cudaMemcpyHostToDevice, s);
                  },
                  [=, this](cudaStream_t s) {
                    return ncclAllReduce(*dev, *dev, data.size(), ncclDouble, redop, shared_->comm, s);
                  },
                  [=](cudaStream_t s) {
                    const cudaError_t e = cudaMemcpyAsync(pinned->ptr, *dev, bytes, cudaMemcpyDeviceToHost, s);
                    cudaFreeAsync(*dev, s);
                    return e;
                  }},
                 [pinned, data] { std::copy(pinned->ptr, pinned->ptr + data.size(), data.begin()); });
  }

  std::shared_ptr<Work> Broadcast(std::span<float> data, int root) override {
    if (root < 0 || root >= size_) {
      return CompletedWork(absl::InvalidArgumentError(absl::StrCat("broadcast root ", root, " of ", size_)));
    }
    return Issue("broadcast", {nullptr,
                               [=, this](cudaStream_t s) {
                                 return ncclBroadcast(data.data(), data.data(), data.size(), ncclFloat, root,
                                                      shared_->comm, s);
                               },
                               nullptr});
  }

  std::shared_ptr<Work> AllGather(std::span<const float> in, std::span<float> out) override {
    if (out.size() != in.size() * static_cast<size_t>(size_)) {
      return CompletedWork(absl::InvalidArgumentError(
          absl::StrCat("allgather: output holds ", out.size(), " elements, expected ", size_, " x ", in.size())));
    }
    return Issue("allgather", {nullptr,
                               [=, this](cudaStream_t s) {
                                 return ncclAllGather(in.data(), out.data(), in.size(), ncclFloat, shared_->comm, s);
                               },
                               nullptr});
  }

  std::shared_ptr<Work> ReduceScatter(std::span<const float> in, std::span<float> out) override {
    const auto [begin, end] = BlockRange(static_cast<int64_t>(in.size()), size_, rank_);
    if (static_cast<int64_t>(out.size()) != end - begin) {
      return CompletedWork(absl::InvalidArgumentError(
          absl::StrCat("reducescatter: output holds ", out.size(), " elements, this rank's block has ", end - begin)));
    }
    if (in.size() % static_cast<size_t>(size_) == 0) {
      return Issue("reducescatter", {nullptr,
                                     [=, this](cudaStream_t s) {
                                       return ncclReduceScatter(in.data(), out.data(), out.size(), ncclFloat, ncclSum,
                                                                shared_->comm, s);
                                     },
                                     nullptr});
    }
    // Uneven blocks: NCCL's reduce-scatter needs equal ones, so one reduce per block to its
    // owner, grouped into a single launch.
    std::vector<int64_t> bounds = EvenBounds(static_cast<int64_t>(in.size()), size_);
    return Issue(
        "reducescatter (uneven)",
        {nullptr, [=, this](cudaStream_t s) { return ReduceToOwners(in.data(), out.data(), bounds, s); }, nullptr});
  }

  // In place: one ncclReduce per non-empty block to its owner, grouped into one launch (NCCL's
  // own reduce-scatter takes equal blocks only).
  std::shared_ptr<Work> ReduceScatterBlocks(std::span<float> data, std::span<const int64_t> bounds) override {
    if (absl::Status s = CheckBounds(bounds, static_cast<int64_t>(data.size()), size_, "reducescatter"); !s.ok()) {
      return CompletedWork(s);
    }
    std::vector<int64_t> b(bounds.begin(), bounds.end());
    float* const mine = data.data() + b[rank_];
    return Issue("reducescatter (blocks)",
                 {nullptr, [=, this](cudaStream_t s) { return ReduceToOwners(data.data(), mine, b, s); }, nullptr});
  }

  // In place: one ncclBroadcast per non-empty block from its owner, grouped into one launch.
  std::shared_ptr<Work> AllGatherBlocks(std::span<float> data, std::span<const int64_t> bounds) override {
    if (absl::Status s = CheckBounds(bounds, static_cast<int64_t>(data.size()), size_, "allgather"); !s.ok()) {
      return CompletedWork(s);
    }
    std::vector<int64_t> b(bounds.begin(), bounds.end());
    return Issue("allgather (blocks)", {nullptr,
                                        [=, this](cudaStream_t s) {
                                          return Grouped(b, [&](int r, int64_t begin, int64_t n) {
                                            return ncclBroadcast(data.data() + begin, data.data() + begin, n, ncclFloat,
                                                                 r, shared_->comm, s);
                                          });
                                        },
                                        nullptr});
  }

  std::shared_ptr<Work> Barrier() override {
    return Issue("barrier", {nullptr,
                             [this](cudaStream_t s) {
                               return ncclAllReduce(barrier_, barrier_, 1, ncclFloat, ncclSum, shared_->comm, s);
                             },
                             nullptr});
  }

  void Abort() override { shared_->Abort("aborted by the coordinator"); }

 private:
  struct PinnedDoubles {
    explicit PinnedDoubles(size_t n) {
      if (cudaMallocHost(&ptr, std::max<size_t>(n, 1) * sizeof(double)) != cudaSuccess) ptr = nullptr;
    }
    ~PinnedDoubles() { cudaFreeHost(ptr); }
    double* ptr = nullptr;
  };

  // Calls op(r, begin, count) for each non-empty block [bounds[r], bounds[r + 1]) inside one NCCL
  // group, so the per-block collectives run as one launch.
  template <typename Op>
  static ncclResult_t Grouped(const std::vector<int64_t>& bounds, Op op) {
    if (ncclResult_t r = ncclGroupStart(); r != ncclSuccess) return r;
    ncclResult_t first = ncclSuccess;
    for (size_t r = 0; r + 1 < bounds.size() && first == ncclSuccess; ++r) {
      const int64_t n = bounds[r + 1] - bounds[r];
      if (n > 0) first = op(static_cast<int>(r), bounds[r], n);
    }
    const ncclResult_t end = ncclGroupEnd();
    return first != ncclSuccess ? first : end;
  }

  // Sums each block of `in` (bounds over it) into its owner; this rank's block lands at `out`.
  ncclResult_t ReduceToOwners(const float* in, float* out, const std::vector<int64_t>& bounds, cudaStream_t s) {
    return Grouped(bounds, [&](int r, int64_t begin, int64_t n) {
      // recvbuff matters only at the root; elsewhere any device pointer does.
      float* recv = r == rank_ ? out : const_cast<float*>(in + begin);
      return ncclReduce(in + begin, recv, n, ncclFloat, ncclSum, r, shared_->comm, s);
    });
  }

  // Orders the collective after the compute stream's queued work, enqueues its parts on the
  // communication stream, and records its completion event. Issue order is the same on every
  // rank (the caller's duty), and one lock keeps it so within this process.
  std::shared_ptr<Work> Issue(const char* kind, const Steps& steps, std::function<void()> on_done = nullptr) {
    absl::MutexLock lock(&issue_mu_);
    const int64_t seq = sequence_.fetch_add(1);
    const std::string what = absl::StrCat(kind, " #", seq, " on rank ", rank_, " of ", size_);
    // A collective that never reached the stream is over at once: it counts as completed.
    auto fail = [this](absl::Status s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(issue_mu_) {
      ++completed_;
      return CompletedWork(std::move(s));
    };
    if (shared_->aborted.load()) {
      return fail(absl::AbortedError(absl::StrCat(what, ": the generation was aborted")));
    }
    cudaSetDevice(shared_->device);
    cudaEvent_t ready = nullptr;
    absl::Status status = CudaStatus(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), what);
    if (status.ok()) status = CudaStatus(cudaEventRecord(ready, compute_), what);
    if (status.ok()) status = CudaStatus(cudaStreamWaitEvent(stream_, ready, 0), what);
    // Destroying a recorded event is safe: the stream's wait on it stays queued.
    if (ready != nullptr) cudaEventDestroy(ready);
    // Timed events (the default flags) bracket the collective, its casts included.
    cudaEvent_t begin = nullptr;
    if (status.ok()) status = CudaStatus(cudaEventCreate(&begin), what);
    if (status.ok()) status = CudaStatus(cudaEventRecord(begin, stream_), what);
    if (status.ok() && steps.before) status = CudaStatus(steps.before(stream_), what);
    if (!status.ok()) {
      if (begin != nullptr) cudaEventDestroy(begin);
      return fail(status);
    }

    const absl::Time started = absl::Now();
    ncclResult_t r;
    {
      absl::ReaderMutexLock comm_lock(&shared_->mu);
      if (shared_->aborted.load()) {
        cudaEventDestroy(begin);
        return fail(absl::AbortedError(absl::StrCat(what, ": the generation was aborted")));
      }
      r = steps.collective(stream_);
    }
    if (r == ncclInProgress) {
      status = shared_->Settle(what, started);
    } else if (r != ncclSuccess) {
      status = absl::UnavailableError(absl::StrCat(what, " failed: ", shared_->Describe(r)));
    }
    if (status.ok() && steps.after) status = CudaStatus(steps.after(stream_), what);
    cudaEvent_t done = nullptr;
    if (status.ok()) status = CudaStatus(cudaEventCreate(&done), what);
    if (status.ok()) status = CudaStatus(cudaEventRecord(done, stream_), what);
    if (!status.ok()) {
      cudaEventDestroy(begin);
      if (done != nullptr) cudaEventDestroy(done);
      return fail(status);
    }
    auto work = std::make_shared<NcclWork>(shared_, what, begin, done, std::move(on_done));
    // Finished collectives leave the list as new ones join, so a caller that never asks for
    // completed() (a benchmark) does not keep every event alive.
    while (!inflight_.empty() && inflight_.front()->Done()) {
      inflight_.pop_front();
      ++completed_;
    }
    inflight_.push_back(work);
    return work;
  }

  std::shared_ptr<Shared> shared_;
  const int rank_;
  const int size_;
  const cudaStream_t stream_;
  const cudaStream_t compute_;
  float* const barrier_;
  std::atomic<int64_t> sequence_{0};
  mutable absl::Mutex issue_mu_;
  mutable std::deque<std::shared_ptr<NcclWork>> inflight_ ABSL_GUARDED_BY(issue_mu_);
  mutable int64_t completed_ ABSL_GUARDED_BY(issue_mu_) = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> ConnectNccl(KvClient* kv, int rank, int size,
                                                          const NcclOptions& options) {
  if (size < 1 || rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(absl::StrCat("nccl: rank ", rank, " of ", size));
  }
  ncclUniqueId id;
  if (rank == 0) {
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
      return absl::UnavailableError(absl::StrCat("nccl: creating the unique id: ", ncclGetErrorString(r)));
    }
    if (absl::Status s = kv->Set(kUniqueIdKey, std::string(reinterpret_cast<const char*>(&id), sizeof(id))); !s.ok()) {
      return s;
    }
  } else {
    auto value = kv->Get(kUniqueIdKey, options.timeout);
    if (!value.ok()) return value.status();
    if (value->size() != sizeof(id)) {
      return absl::DataLossError(
          absl::StrCat("nccl: the unique id has ", value->size(), " bytes, expected ", sizeof(id)));
    }
    std::memcpy(&id, value->data(), sizeof(id));
  }

  if (absl::Status s = CudaStatus(cudaSetDevice(options.device), absl::StrCat("nccl: cuda:", options.device));
      !s.ok()) {
    return s;
  }
  auto shared = std::make_shared<Shared>();
  shared->device = options.device;
  shared->timeout = options.timeout;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const absl::Time started = absl::Now();
  ncclResult_t r = ncclCommInitRankConfig(&shared->comm, size, id, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    return absl::UnavailableError(absl::StrCat("nccl: joining rank ", rank, " of ", size, ": ", ncclGetErrorString(r)));
  }
  if (absl::Status s = shared->Settle(absl::StrCat("nccl: joining rank ", rank, " of ", size), started); !s.ok()) {
    return s;
  }
  cudaStream_t stream = nullptr;
  float* barrier = nullptr;
  absl::Status s = CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "nccl: stream");
  if (s.ok()) s = CudaStatus(cudaMalloc(reinterpret_cast<void**>(&barrier), sizeof(float)), "nccl: barrier buffer");
  if (!s.ok()) {
    ncclCommAbort(shared->comm);
    return s;
  }
  return std::unique_ptr<Communicator>(
      new NcclCommunicator(std::move(shared), rank, size, stream, options.compute_stream, barrier));
}

}  // namespace gradsync::comm

// The Gloo backend: CPU memory over Gloo's TCP transport, with all-reduce through shared memory
// when every rank can map one segment (see shm_allreduce.h). Both transports sum every element in
// rank order, so a job ends with the same bits wherever its ranks run. Every operation runs on the
// communicator's single work thread, in issue order; Gloo's exceptions and the shared-memory
// path's errors become statuses there, a Gloo error about one peer naming its rank (gloo_peers.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "bf16.h"
#include "gloo/allgather.h"
#include "gloo/allgatherv.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/transport/tcp/device.h"
#include "gloo/types.h"
#include "gloo_peers.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/comm/gloo_store.h"
#include "gradsync/core/log.h"
#include "shm_allreduce.h"
#include "socket_abort.h"
#include "work_queue.h"

namespace gradsync::comm {
namespace {

using internal::GlooPeers;
using internal::ShmAllReduce;
using internal::ShmSegment;

// Tags of the setup's collectives (shared memory's offer and agreement, and the exchange of
// connection endpoints that lets errors name a lost peer), far above any collective's sequence
// number.
constexpr uint32_t kShmOfferTag = 0x7fff0000;
constexpr uint32_t kShmAgreeTag = 0x7fff0001;
constexpr uint32_t kPeerExchangeTag = 0x7fff0002;

// The slot prefix of the rank-order reduce-scatter's messages, apart from Gloo's own (types.h).
constexpr uint8_t kRankOrderSlotPrefix = 0x40;

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

// A failed shared-memory collective, carried out of the operation like Gloo's exceptions.
struct ShmFailure : std::exception {
  explicit ShmFailure(absl::Status s) : status(std::move(s)) {}
  const char* what() const noexcept override { return "shared-memory all-reduce failed"; }
  absl::Status status;
};

template <typename T>
void SumInto(void* c, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(c);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}

// bf16 + bf16, added in fp32 and rounded back once per hop.
void SumBf16(void* c, const void* a, const void* b, size_t n) {
  uint16_t* out = static_cast<uint16_t*>(c);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = FloatToBf16(Bf16ToFloat(x[i]) + Bf16ToFloat(y[i]));
}

class GlooCommunicator : public Communicator {
 public:
  void Abort() override {
    absl::MutexLock lock(&abort_mu_);
    aborted_ = true;
    if (shm_ != nullptr) shm_->Abort();
    // Gloo notices neither a closed peer nor its timeout promptly while waiting on a send; its
    // buffers can be told to stop waiting, which makes the collective throw.
    for (gloo::transport::UnboundBuffer* b : inflight_) {
      b->abortWaitSend();
      b->abortWaitRecv();
    }
    // Gloo's algorithms also wait on scratch buffers of their own (the ring all-reduce receives
    // into one), out of reach of the calls above; ending the connections fails those waits too.
    // Without this a survivor whose peer is partitioned or frozen (no connection ever closes)
    // sits out the collective timeout.
    internal::ShutdownPairSockets(context_);
  }

  // `context` has its full mesh connected; `peers` come from it.
  GlooCommunicator(std::shared_ptr<gloo::rendezvous::Context> context, GlooPeers peers)
      : context_(std::move(context)), peers_(std::move(peers)) {}

  // A Gloo exception's text, led by the rank it is about when it names one.
  std::string Explain(const std::exception& e) const { return peers_.Explain(e.what()); }

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  int64_t sequence() const override { return sequence_.load(); }
  int64_t completed() const override { return completed_.load(); }
  std::string backend() const override { return shm_ != nullptr ? "gloo (shared memory)" : "gloo"; }

  // Moves all-reduce onto shared memory when every rank maps rank 0's segment (they share a host
  // and an IPC namespace); otherwise all-reduce stays on TCP. Runs once, before any collective,
  // on the connecting thread; throws Gloo's exceptions if a peer fails meanwhile.
  void SetUpSharedMemory(size_t slot_bytes) {
    struct Offer {
      char name[96];
      uint64_t token;
      uint32_t ok;
      uint32_t pad;
    } offer{};
    slot_bytes = std::max<size_t>(64, (slot_bytes + 63) / 64 * 64);
    const size_t bytes = ShmAllReduce::SegmentBytes(size(), slot_bytes);
    std::optional<ShmSegment> created;
    absl::Status why;  // this rank's reason for staying on TCP
    if (rank() == 0) {
      auto segment = ShmSegment::Create(bytes);
      why = segment.status();
      if (segment.ok() && segment->name().size() >= sizeof(offer.name)) {
        why = absl::InternalError(absl::StrCat("segment name ", segment->name(), " is too long"));
      } else if (segment.ok()) {
        std::random_device rd;
        offer.token = (static_cast<uint64_t>(rd()) << 32) | rd();
        ShmAllReduce::Format(*segment, size(), slot_bytes, offer.token);
        std::memcpy(offer.name, segment->name().data(), segment->name().size());
        offer.ok = 1;
        created.emplace(*std::move(segment));
      }
    }
    {
      gloo::BroadcastOptions opts(context_);
      opts.setTag(kShmOfferTag);
      opts.setRoot(0);
      opts.setOutput(reinterpret_cast<uint8_t*>(&offer), sizeof(offer));
      gloo::broadcast(opts);
    }
    std::unique_ptr<ShmAllReduce> mine;
    if (offer.ok != 0) {
      absl::StatusOr<ShmSegment> segment =
          created.has_value() ? absl::StatusOr<ShmSegment>(*std::move(created)) : ShmSegment::Open(offer.name, bytes);
      if (segment.ok()) {
        auto attached = ShmAllReduce::Attach(*std::move(segment), rank(), size(), slot_bytes, offer.token);
        if (attached.ok()) mine = *std::move(attached);
        why = attached.status();
      } else {
        why = segment.status();
      }
    } else if (rank() != 0) {
      why = absl::UnavailableError("rank 0 could not create a segment");
    }
    // Every rank must take the same path: shared memory only if all of them attached.
    double attached = mine != nullptr ? 1.0 : 0.0;
    RunAllReduce(&attached, 1, &SumInto<double>, kShmAgreeTag);
    if (attached == static_cast<double>(size())) {
      if (rank() == 0) mine->segment().Unlink();  // every rank has it mapped: leave no name behind
      shm_ = std::move(mine);
    } else {
      // Ranks on different hosts (or pods) land here as a matter of course.
      GS_LOG(INFO) << "gloo rank " << rank() << ": all-reduce over TCP: "
                   << (why.ok() ? std::string("another rank could not map rank 0's shared memory")
                                : absl::StrCat("shared memory unavailable: ", why.message()));
    }
  }

  std::shared_ptr<Work> AllReduce(std::span<float> data, ReduceOp op, WireType wire) override {
    return Submit("allreduce", [this, data, op, wire](uint32_t tag) {
      if (wire == WireType::kBFloat16) {
        std::vector<uint16_t> packed(data.size());
        for (size_t i = 0; i < data.size(); ++i) packed[i] = FloatToBf16(data[i]);
        RunAllReduce(packed.data(), packed.size(), &SumBf16, tag);
        for (size_t i = 0; i < data.size(); ++i) data[i] = Bf16ToFloat(packed[i]);
      } else {
        RunAllReduce(data.data(), data.size(), &SumInto<float>, tag);
      }
      if (op == ReduceOp::kAverage) {
        const float inv = 1.0f / static_cast<float>(size());
        for (float& v : data) v *= inv;
      }
    });
  }

  std::shared_ptr<Work> AllReduce(std::span<double> data, ReduceOp op) override {
    return Submit("allreduce", [this, data, op](uint32_t tag) {
      RunAllReduce(data.data(), data.size(), &SumInto<double>, tag);
      if (op == ReduceOp::kAverage) {
        for (double& v : data) v /= size();
      }
    });
  }

  std::shared_ptr<Work> Broadcast(std::span<float> data, int root) override {
    if (root < 0 || root >= size()) {
      return CompletedWork(absl::InvalidArgumentError(absl::StrCat("broadcast root ", root, " of ", size())));
    }
    return Submit("broadcast", [this, data, root](uint32_t tag) {
      if (data.empty() || size() == 1) return;
      gloo::BroadcastOptions opts(context_);
      const InflightGuard guard(this);
      opts.setTag(tag);
      opts.setRoot(root);
      opts.setOutput<float>(Track(context_->createUnboundBuffer(data.data(), data.size_bytes())));
      gloo::broadcast(opts);
    });
  }

  std::shared_ptr<Work> AllGather(std::span<const float> in, std::span<float> out) override {
    if (out.size() != in.size() * static_cast<size_t>(size())) {
      return CompletedWork(absl::InvalidArgumentError(
          absl::StrCat("allgather output has ", out.size(), " elements, needs ", in.size() * size())));
    }
    return Submit("allgather", [this, in, out](uint32_t tag) {
      if (in.empty()) return;
      if (size() == 1) {
        std::copy(in.begin(), in.end(), out.begin());
        return;
      }
      gloo::AllgatherOptions opts(context_);
      const InflightGuard guard(this);
      opts.setTag(tag);
      opts.setInput<float>(Track(context_->createUnboundBuffer(const_cast<float*>(in.data()), in.size_bytes())));
      opts.setOutput<float>(Track(context_->createUnboundBuffer(out.data(), out.size_bytes())));
      gloo::allgather(opts);
    });
  }

  std::shared_ptr<Work> ReduceScatter(std::span<const float> in, std::span<float> out) override {
    const auto [begin, end] = BlockRange(static_cast<int64_t>(in.size()), size(), rank());
    if (static_cast<int64_t>(out.size()) != end - begin) {
      return CompletedWork(absl::InvalidArgumentError(absl::StrCat(
          "reduce-scatter output has ", out.size(), " elements, rank ", rank(), "'s block has ", end - begin)));
    }
    return Submit("reducescatter", [this, in, out, begin = begin](uint32_t tag) {
      if (in.empty()) return;
      // Gloo's own reduce-scatter (halving-doubling) returns wrong blocks when the block sizes are
      // uneven or the world size is not a power of two, and adds in another order: a copy goes
      // through the rank-order reduce-scatter instead.
      std::vector<float> scratch(in.begin(), in.end());
      RunReduceScatter(scratch.data(), EvenBounds(static_cast<int64_t>(scratch.size()), size()), &SumInto<float>, tag);
      std::copy(scratch.begin() + begin, scratch.begin() + begin + static_cast<int64_t>(out.size()), out.begin());
    });
  }

  std::shared_ptr<Work> ReduceScatterBlocks(std::span<float> data, std::span<const int64_t> bounds) override {
    if (absl::Status s = CheckBounds(bounds, static_cast<int64_t>(data.size()), size(), "reducescatter"); !s.ok()) {
      return CompletedWork(s);
    }
    return Submit("reducescatter", [this, data, bounds = std::vector<int64_t>(bounds.begin(), bounds.end())](
                                       uint32_t tag) { RunReduceScatter(data.data(), bounds, &SumInto<float>, tag); });
  }

  std::shared_ptr<Work> AllGatherBlocks(std::span<float> data, std::span<const int64_t> bounds) override {
    if (absl::Status s = CheckBounds(bounds, static_cast<int64_t>(data.size()), size(), "allgather"); !s.ok()) {
      return CompletedWork(s);
    }
    return Submit("allgather", [this, data, bounds = std::vector<int64_t>(bounds.begin(), bounds.end())](uint32_t tag) {
      if (data.empty() || size() == 1) return;
      if (shm_ != nullptr) {
        const absl::Status s = shm_->AllGather(data.data(), data.size(), sizeof(float), bounds, Deadline());
        if (!s.ok()) throw ShmFailure(s);
        return;
      }
      AllGatherInPlace(data.data(), bounds, tag);
    });
  }

  std::shared_ptr<Work> Barrier() override {
    return Submit("barrier", [this](uint32_t tag) {
      gloo::BarrierOptions opts(context_);
      opts.setTag(tag);
      gloo::barrier(opts);
    });
  }

 private:
  // When a shared-memory collective starting now gives up on a silent peer.
  absl::Time Deadline() const { return absl::Now() + absl::FromChrono(context_->getTimeout()); }

  // Every element is summed in rank order, ((x_0 + x_1) + x_2) + ..., on every transport: over
  // shared memory (shm_allreduce.h) and over TCP (ReduceScatterInRankOrder, then an all-gather),
  // so a job's bits do not depend on where its ranks run.
  template <typename T>
  void RunAllReduce(T* data, size_t count, ReduceFn fn, uint32_t tag) {
    if (count == 0 || size() == 1) return;
    if (shm_ != nullptr) {
      const absl::Status s = shm_->Run(data, count, sizeof(T), fn, Deadline());
      if (!s.ok()) throw ShmFailure(s);
      return;
    }
    const std::vector<int64_t> bounds = EvenBounds(static_cast<int64_t>(count), size());
    ReduceScatterInRankOrder(data, bounds, fn, tag);
    AllGatherInPlace(data, bounds, tag);
  }

  // Rank r ends with the sums of elements [bounds[r], bounds[r + 1]) of `data`, summed in rank
  // order; the rest of `data` is unspecified.
  template <typename T>
  void RunReduceScatter(T* data, const std::vector<int64_t>& bounds, ReduceFn fn, uint32_t tag) {
    if (bounds.back() == 0 || size() == 1) return;
    if (shm_ != nullptr) {
      const absl::Status s =
          shm_->ReduceScatter(data, static_cast<size_t>(bounds.back()), sizeof(T), fn,
                              static_cast<size_t>(bounds[rank()]), static_cast<size_t>(bounds[rank() + 1]), Deadline());
      if (!s.ok()) throw ShmFailure(s);
      return;
    }
    ReduceScatterInRankOrder(data, bounds, fn, tag);
  }

  // The reduce-scatter over TCP: every rank sends each peer that peer's block of `data` directly,
  // receives its own block from every peer, and sums the contributions in rank order, as the
  // shared-memory path does. A rank moves (n-1)/n of the buffer each way, as a ring's
  // reduce-scatter does, in n-1 messages each way instead of n-1 ring steps.
  template <typename T>
  void ReduceScatterInRankOrder(T* data, const std::vector<int64_t>& bounds, ReduceFn fn, uint32_t tag) {
    const int me = rank(), n = size();
    const int64_t begin = bounds[me], block = bounds[me + 1] - begin;
    const auto count = static_cast<size_t>(bounds.back());
    const gloo::Slot slot = gloo::Slot::build(kRankOrderSlotPrefix, tag);
    // Every rank's contribution to this rank's block, in rank order (this rank's own copied in).
    std::vector<T> inbox(static_cast<size_t>(block) * n);
    const InflightGuard guard(this);
    std::unique_ptr<gloo::transport::UnboundBuffer> out = Track(context_->createUnboundBuffer(data, count * sizeof(T)));
    std::unique_ptr<gloo::transport::UnboundBuffer> in;
    if (block > 0) in = Track(context_->createUnboundBuffer(inbox.data(), inbox.size() * sizeof(T)));
    int sends = 0, recvs = 0;
    for (int j = 0; j < n; ++j) {
      if (j == me) continue;
      if (const int64_t len = bounds[j + 1] - bounds[j]; len > 0) {
        out->send(j, slot, bounds[j] * sizeof(T), len * sizeof(T));
        ++sends;
      }
      if (block > 0) {
        in->recv(j, slot, j * block * sizeof(T), block * sizeof(T));
        ++recvs;
      }
    }
    std::copy_n(data + begin, block, inbox.data() + me * block);
    for (int i = 0; i < recvs; ++i) {
      if (!in->waitRecv()) throw std::runtime_error("reduce-scatter aborted");
    }
    if (block > 0) {
      fn(data + begin, inbox.data(), inbox.data() + block, static_cast<size_t>(block));
      for (int j = 2; j < n; ++j) fn(data + begin, data + begin, inbox.data() + j * block, static_cast<size_t>(block));
    }
    for (int i = 0; i < sends; ++i) {
      if (!out->waitSend()) throw std::runtime_error("reduce-scatter aborted");
    }
  }

  // Rank r's block [bounds[r], bounds[r + 1]) of `data` is its contribution; every rank ends with
  // all of them, over TCP.
  template <typename T>
  void AllGatherInPlace(T* data, const std::vector<int64_t>& bounds, uint32_t tag) {
    std::vector<size_t> elements(static_cast<size_t>(size()));
    for (int r = 0; r < size(); ++r) elements[r] = static_cast<size_t>(bounds[r + 1] - bounds[r]);
    gloo::AllgathervOptions opts(context_);
    const InflightGuard guard(this);  // declared after opts: forgets the buffers before they die
    opts.setTag(tag);
    // No input: in place, this rank's block of the output is its contribution.
    opts.setOutput<T>(Track(context_->createUnboundBuffer(data, static_cast<size_t>(bounds.back()) * sizeof(T))),
                      elements);
    gloo::allgatherv(opts);
  }

  // Forgets the in-flight buffers when a collective's scope ends, before its options (which own
  // the buffers) are destroyed, so Abort() never touches a dead buffer.
  struct InflightGuard {
    explicit InflightGuard(GlooCommunicator* c) : c(c) {}
    ~InflightGuard() {
      absl::MutexLock lock(&c->abort_mu_);
      c->inflight_.clear();
    }
    GlooCommunicator* c;
  };

  // Registers a buffer as in flight so Abort() can interrupt the collective using it.
  std::unique_ptr<gloo::transport::UnboundBuffer> Track(std::unique_ptr<gloo::transport::UnboundBuffer> buf) {
    absl::MutexLock lock(&abort_mu_);
    inflight_.push_back(buf.get());
    if (aborted_) {
      buf->abortWaitSend();
      buf->abortWaitRecv();
    }
    return buf;
  }

  // Queues one collective with the next tag; Gloo's exceptions become a status naming it.
  template <typename Fn>
  std::shared_ptr<Work> Submit(const char* what, Fn fn) {
    const uint32_t tag = static_cast<uint32_t>(sequence_.fetch_add(1));
    return queue_.Submit([this, what, tag, fn = std::move(fn)]() -> absl::Status {
      struct CountDone {
        std::atomic<int64_t>* n;
        ~CountDone() { n->fetch_add(1); }
      } count_done{&completed_};
      {
        absl::MutexLock lock(&abort_mu_);
        if (aborted_) return absl::AbortedError(absl::StrCat(what, " #", tag, ": the generation was aborted"));
      }
      absl::Status status;
      try {
        fn(tag);
      } catch (const ShmFailure& e) {
        status = absl::Status(e.status.code(), absl::StrCat(what, " #", tag, " on rank ", rank(), " of ", size(),
                                                            " failed: ", e.status.message()));
      } catch (const std::exception& e) {
        status = absl::UnavailableError(
            absl::StrCat(what, " #", tag, " on rank ", rank(), " of ", size(), " failed: ", Explain(e)));
      }
      absl::MutexLock lock(&abort_mu_);
      if (aborted_ && !status.ok()) {
        return absl::AbortedError(absl::StrCat(what, " #", tag, ": the generation was aborted"));
      }
      return status;
    });
  }

  std::shared_ptr<gloo::rendezvous::Context> context_;
  const GlooPeers peers_;
  std::atomic<int64_t> sequence_{0};
  std::atomic<int64_t> completed_{0};
  absl::Mutex abort_mu_;
  bool aborted_ ABSL_GUARDED_BY(abort_mu_) = false;
  // Set once before the communicator is handed out; null when all-reduce goes over TCP.
  std::unique_ptr<ShmAllReduce> shm_;
  // Buffers of the collective running now (only the work thread runs collectives).
  std::vector<gloo::transport::UnboundBuffer*> inflight_ ABSL_GUARDED_BY(abort_mu_);
  // Declared last: destroyed first, so queued operations finish while the context lives.
  WorkQueue queue_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> ConnectGloo(KvClient* kv, int rank, int size,
                                                          const GlooOptions& options) {
  const auto timeout = absl::ToChronoMilliseconds(options.timeout);
  KvGlooStore store(kv, timeout);
  gloo::rendezvous::PrefixStore prefixed("gloo", store);
  internal::RecordingStore recorded(prefixed);
  std::unique_ptr<GlooCommunicator> comm;  // set once the mesh is connected
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    context->connectFullMesh(recorded, device);
    GlooPeers peers = GlooPeers::Published(recorded, rank, size);
    peers.Exchange(context, kPeerExchangeTag);
    comm = std::make_unique<GlooCommunicator>(std::move(context), std::move(peers));
    if (options.shared_memory && size > 1) comm->SetUpSharedMemory(options.shared_memory_slot_bytes);
    return comm;
  } catch (const std::exception& e) {
    const std::string why =
        comm != nullptr ? comm->Explain(e) : GlooPeers::Published(recorded, rank, size).Explain(e.what());
    return absl::UnavailableError(absl::StrCat("gloo rendezvous of rank ", rank, " of ", size, " failed: ", why));
  }
}

}  // namespace gradsync::comm

#include <chrono>
#include <exception>

#include "absl/strings/str_cat.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/transport/tcp/device.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/comm/gloo_store.h"

namespace gradsync::comm {
namespace {

template <typename T>
void SumInto(void* c, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(c);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}

class GlooCommunicator : public Communicator {
 public:
  explicit GlooCommunicator(std::shared_ptr<gloo::rendezvous::Context> context)
      : context_(std::move(context)) {}

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  int64_t sequence() const override { return sequence_; }

  absl::Status AllReduceSum(std::span<float> data) override { return AllReduce(data); }
  absl::Status AllReduceSum(std::span<double> data) override { return AllReduce(data); }

  absl::Status Broadcast(std::span<float> data, int root) override {
    return Guard("broadcast", [&](uint32_t tag) {
      gloo::BroadcastOptions opts(context_);
      opts.setTag(tag);
      opts.setRoot(root);
      opts.setOutput(data.data(), data.size());
      gloo::broadcast(opts);
    });
  }

  absl::Status Barrier() override {
    return Guard("barrier", [&](uint32_t tag) {
      gloo::BarrierOptions opts(context_);
      opts.setTag(tag);
      gloo::barrier(opts);
    });
  }

 private:
  template <typename T>
  absl::Status AllReduce(std::span<T> data) {
    if (data.empty() || size() == 1) {
      ++sequence_;
      return absl::OkStatus();
    }
    return Guard("allreduce", [&](uint32_t tag) {
      gloo::AllreduceOptions opts(context_);
      opts.setTag(tag);
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      opts.setOutput(data.data(), data.size());
      opts.setReduceFunction(&SumInto<T>);
      gloo::allreduce(opts);
    });
  }

  // Runs one collective with a fresh tag, turning Gloo's exceptions into a status.
  template <typename Fn>
  absl::Status Guard(const char* what, Fn&& fn) {
    const uint32_t tag = static_cast<uint32_t>(sequence_++);
    try {
      fn(tag);
      return absl::OkStatus();
    } catch (const std::exception& e) {
      return absl::UnavailableError(
          absl::StrCat(what, " #", tag, " on rank ", rank(), " failed: ", e.what()));
    }
  }

  std::shared_ptr<gloo::rendezvous::Context> context_;
  int64_t sequence_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> ConnectGloo(KvClient* kv, int rank, int size,
                                                          const GlooOptions& options) {
  const auto timeout = absl::ToChronoMilliseconds(options.timeout);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    KvGlooStore store(kv, timeout);
    gloo::rendezvous::PrefixStore prefixed("gloo", store);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    context->connectFullMesh(prefixed, device);
    return std::make_unique<GlooCommunicator>(std::move(context));
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("gloo rendezvous of rank ", rank, " of ", size, " failed: ", e.what()));
  }
}

}  // namespace gradsync::comm

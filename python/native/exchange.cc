#include "exchange.h"

#include <span>

#include "absl/strings/str_cat.h"
#include "device_exchange.h"

namespace gradsync::python {
namespace {

// A KvClient whose keys all start with a prefix: one exchange's rendezvous keys apart from
// another's, and from the worker's own ("script/...").
class PrefixedKv : public comm::KvClient {
 public:
  PrefixedKv(comm::KvClient* kv, std::string prefix) : kv_(kv), prefix_(std::move(prefix)) {}
  absl::Status Set(const std::string& key, const std::string& value) override { return kv_->Set(prefix_ + key, value); }
  absl::StatusOr<std::string> Get(const std::string& key, absl::Duration timeout) override {
    return kv_->Get(prefix_ + key, timeout);
  }
  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override {
    std::vector<std::string> prefixed;
    for (const std::string& k : keys) prefixed.push_back(prefix_ + k);
    return kv_->Wait(prefixed, timeout);
  }
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override { return kv_->Add(prefix_ + key, delta); }

 private:
  comm::KvClient* kv_;
  const std::string prefix_;
};

std::span<float> Span(float* data, int64_t count) { return {data, static_cast<size_t>(count)}; }

}  // namespace

absl::StatusOr<std::unique_ptr<Exchange>> Exchange::Connect(std::unique_ptr<comm::KvClient> kv, int rank, int world,
                                                            const ExchangeOptions& options) {
  auto prefixed = std::make_unique<PrefixedKv>(kv.get(), absl::StrCat("torch/", options.name, "/"));
  std::unique_ptr<comm::Communicator> host, device;
  if (options.device >= 0) {
    absl::StatusOr<DeviceCommunicator> c = ConnectDevice(
        prefixed.get(), rank, world,
        {options.device, options.stream, options.backend, options.host, options.timeout, options.shared_memory});
    if (!c.ok()) return c.status();
    host = std::move(c->host);
    device = std::move(c->device);
  } else {
    comm::GlooOptions gloo;
    gloo.hostname = options.host;
    gloo.timeout = options.timeout;
    gloo.shared_memory = options.shared_memory;
    absl::StatusOr<std::unique_ptr<comm::Communicator>> c = comm::ConnectGloo(prefixed.get(), rank, world, gloo);
    if (!c.ok()) return c.status();
    device = *std::move(c);
  }
  // The prefixed client lives as long as the exchange: the communicator may use the store again.
  std::unique_ptr<Exchange> exchange(new Exchange(std::move(kv), std::move(device)));
  exchange->prefixed_ = std::move(prefixed);
  exchange->host_comm_ = std::move(host);
  return exchange;
}

Exchange::Exchange(std::unique_ptr<comm::KvClient> kv, std::unique_ptr<comm::Communicator> comm)
    : kv_(std::move(kv)), comm_(std::move(comm)), completer_([this] { Complete(); }) {}

Exchange::~Exchange() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  completer_.join();
  comm_.reset();
}

absl::Status Exchange::AllReduce(float* data, int64_t count) {
  return comm_->AllReduce(Span(data, count), comm::ReduceOp::kSum)->Wait();
}

void Exchange::AllReduceAsync(float* data, int64_t count, Done done) {
  std::shared_ptr<comm::Work> work = comm_->AllReduce(Span(data, count), comm::ReduceOp::kSum);
  {
    std::lock_guard lock(mu_);
    pending_.emplace_back(std::move(work), std::move(done));
  }
  changed_.notify_all();
}

absl::Status Exchange::Broadcast(float* data, int64_t count, int root) {
  return comm_->Broadcast(Span(data, count), root)->Wait();
}

absl::Status Exchange::Barrier() { return comm_->Barrier()->Wait(); }

void Exchange::Complete() {
  for (;;) {
    std::pair<std::shared_ptr<comm::Work>, Done> next;
    {
      std::unique_lock lock(mu_);
      changed_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;
      next = std::move(pending_.front());
      pending_.pop_front();
    }
    const absl::Status status = next.first->Wait();
    next.second(status);
  }
}

}  // namespace gradsync::python

// The parameter exchange of a script rank: gradsync's own communicator (Gloo over TCP between
// hosts, one shared-memory segment between the ranks of a host; for GPU buffers NCCL, or Gloo
// staged through pinned host memory), driven from Python through raw pointers to contiguous fp32
// buffers (a tensor's data_ptr() and numel()), so that no torch header is needed and any torch
// version works. Collectives run in the order they are issued, on the
// communicator's own thread; an asynchronous one reports its end to a callback, called in issue
// order on the exchange's completion thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/comm/kv_client.h"

namespace gradsync::python {

struct ExchangeOptions {
  // Keeps the rendezvous keys of several exchanges of one generation apart.
  std::string name = "default";
  // The address this rank binds and advertises.
  std::string host = "127.0.0.1";
  absl::Duration timeout = absl::Minutes(5);
  bool shared_memory = true;
  // A CUDA device ordinal: buffers live in that GPU's memory (device_exchange.h); -1: host memory.
  int device = -1;
  // With a device: the stream collectives wait for, and "nccl" or "gloo" (staged through the host).
  uintptr_t stream = 0;
  std::string backend = "gloo";
};

class Exchange {
 public:
  using Done = std::function<void(const absl::Status&)>;

  // Meets the other ranks through `kv` (every rank calls it with the same name).
  static absl::StatusOr<std::unique_ptr<Exchange>> Connect(std::unique_ptr<comm::KvClient> kv, int rank, int world,
                                                           const ExchangeOptions& options);
  // Waits for what was issued, then stops the completion thread.
  ~Exchange();

  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  std::string backend() const { return comm_->backend(); }
  // Collectives issued and finished so far (the communicator's counters).
  int64_t issued() const { return comm_->sequence(); }
  int64_t finished() const { return comm_->completed(); }

  // In place: the sum over ranks of `count` floats at `data`, identical bytes on every rank, added
  // in rank order (the same bits run after run).
  absl::Status AllReduce(float* data, int64_t count);
  // The same, returning at once: `done` is called on the completion thread once it finished.
  void AllReduceAsync(float* data, int64_t count, Done done);
  absl::Status Broadcast(float* data, int64_t count, int root);
  absl::Status Barrier();
  // Fails what is in flight and every later collective (a peer is gone).
  void Abort() { comm_->Abort(); }

 private:
  Exchange(std::unique_ptr<comm::KvClient> kv, std::unique_ptr<comm::Communicator> comm);
  void Complete();

  std::unique_ptr<comm::KvClient> kv_;
  std::unique_ptr<comm::KvClient> prefixed_;       // over kv_
  std::unique_ptr<comm::Communicator> host_comm_;  // under comm_ when a GPU's buffers are staged
  std::unique_ptr<comm::Communicator> comm_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::pair<std::shared_ptr<comm::Work>, Done>> pending_;
  bool stopping_ = false;
  std::thread completer_;  // last: starts once the members above exist
};

}  // namespace gradsync::python

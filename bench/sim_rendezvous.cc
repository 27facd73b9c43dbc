#include "sim_rendezvous.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gradsync/rpc/status.h"

namespace gradsync::bench {
namespace {

// The key rank r sets, as Gloo's PrefixStore("gloo") names it.
std::string KeyOf(int rank) { return absl::StrCat("gloo/", rank); }

// Every rank's progress; each call's callback sends that rank's next call and holds the
// Rendezvous, which thus outlives the last callback, not only Run.
class Rendezvous : public std::enable_shared_from_this<Rendezvous> {
 public:
  Rendezvous(const CoordinatorChannels& channels, const RendezvousOptions& options)
      : channels_(channels), options_(options), value_(static_cast<size_t>(options.value_bytes), 'a') {
    ns_.set_job_id(options.job_id);
    ns_.set_generation(options.generation);
  }

  absl::StatusOr<RendezvousResult> Run() {
    start_ = absl::Now();
    for (int r = 0; r < options_.ranks; ++r) Set(r);
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return finished_.size() + failed_ == ranks(); };
    mu_.Await(absl::Condition(&done));
    if (!error_.ok()) return error_;
    std::sort(finished_.begin(), finished_.end());
    return RendezvousResult{finished_.back(), finished_[finished_.size() / 2], calls_, bytes_};
  }

 private:
  size_t ranks() const { return static_cast<size_t>(options_.ranks); }

  template <typename Request, typename Response>
  struct Call {
    grpc::ClientContext ctx;
    Request request;
    Response response;
  };

  void Set(int rank) {
    auto* call = new Call<v1::KvSetRequest, v1::KvSetResponse>;
    *call->request.mutable_ns() = ns_;
    call->request.set_key(KeyOf(rank));
    call->request.set_value(value_);
    channels_.Prepare(&call->ctx, "", absl::Seconds(30));
    auto next = [call, rank, self = shared_from_this()](grpc::Status s) {
      std::unique_ptr<Call<v1::KvSetRequest, v1::KvSetResponse>> owned(call);
      if (self->Done(rank, s, "set", self->options_.value_bytes)) return;
      self->Wait(rank, self->NextPeer(rank, -1));
    };
    channels_.stub(rank)->async()->KvSet(&call->ctx, &call->request, &call->response, std::move(next));
  }

  void Wait(int rank, int peer) {
    if (peer == options_.ranks) return Finish(rank);
    auto* call = new Call<v1::KvWaitRequest, v1::KvWaitResponse>;
    *call->request.mutable_ns() = ns_;
    call->request.add_keys(KeyOf(peer));
    call->request.set_timeout_ms(absl::ToInt64Milliseconds(options_.timeout));
    channels_.Prepare(&call->ctx, "", options_.timeout + absl::Seconds(5));
    auto next = [call, rank, peer, self = shared_from_this()](grpc::Status s) {
      std::unique_ptr<Call<v1::KvWaitRequest, v1::KvWaitResponse>> owned(call);
      if (self->Done(rank, s, absl::StrCat("wait for ", KeyOf(peer)), 0)) return;
      self->Get(rank, peer);
    };
    channels_.stub(rank)->async()->KvWait(&call->ctx, &call->request, &call->response, std::move(next));
  }

  void Get(int rank, int peer) {
    auto* call = new Call<v1::KvGetRequest, v1::KvGetResponse>;
    *call->request.mutable_ns() = ns_;
    call->request.set_key(KeyOf(peer));
    call->request.set_timeout_ms(absl::ToInt64Milliseconds(options_.timeout));
    channels_.Prepare(&call->ctx, "", options_.timeout + absl::Seconds(5));
    auto next = [call, rank, peer, self = shared_from_this()](grpc::Status s) {
      std::unique_ptr<Call<v1::KvGetRequest, v1::KvGetResponse>> owned(call);
      const auto bytes = static_cast<int64_t>(owned->response.value().size());
      if (self->Done(rank, s, absl::StrCat("get ", KeyOf(peer)), bytes)) return;
      self->Wait(rank, self->NextPeer(rank, peer));
    };
    channels_.stub(rank)->async()->KvGet(&call->ctx, &call->request, &call->response, std::move(next));
  }

  // The next rank after `peer` that is not `rank`; ranks() when none is left.
  int NextPeer(int rank, int peer) const {
    const int next = peer + 1;
    return next == rank ? next + 1 : next;
  }

  // Counts a call; true (and the rank stops) when it failed.
  bool Done(int rank, const grpc::Status& status, const std::string& what, int64_t bytes) {
    absl::MutexLock lock(&mu_);
    ++calls_;
    bytes_ += bytes;
    if (status.ok()) return false;
    const absl::Status s = rpc::FromGrpc(status);
    if (error_.ok()) error_ = absl::Status(s.code(), absl::StrCat("rank ", rank, ": ", what, ": ", s.message()));
    ++failed_;
    return true;
  }

  void Finish(int rank) {
    absl::MutexLock lock(&mu_);
    finished_.push_back(absl::Now() - start_);
  }

  const CoordinatorChannels& channels_;
  const RendezvousOptions options_;
  const std::string value_;
  v1::KvNamespace ns_;
  absl::Time start_;

  absl::Mutex mu_;
  std::vector<absl::Duration> finished_ ABSL_GUARDED_BY(mu_);
  size_t failed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t calls_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<RendezvousResult> RunRendezvous(const CoordinatorChannels& channels, const RendezvousOptions& options) {
  if (options.ranks < 1) return absl::InvalidArgumentError(absl::StrCat("ranks: at least 1, got ", options.ranks));
  return std::make_shared<Rendezvous>(channels, options)->Run();
}

}  // namespace gradsync::bench

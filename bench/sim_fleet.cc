#include "sim_fleet.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gradsync/rpc/status.h"

namespace gradsync::bench {
namespace {

// Simulated workers per simulated host, as on an 8-GPU machine.
constexpr size_t kWorkersPerHost = 8;

}  // namespace

struct SimulatedFleet::Worker {
  std::string id;
  std::string session;
  std::unique_ptr<AssignmentStream> stream;
};

struct SimulatedFleet::BeatCall {
  grpc::ClientContext ctx;
  v1::HeartbeatRequest request;
  v1::HeartbeatResponse response;
  size_t worker = 0;
  absl::Time sent;
};

// A worker's WatchAssignments stream, open until the fleet stops or the coordinator ends it.
class SimulatedFleet::AssignmentStream : public grpc::ClientReadReactor<v1::Assignment> {
 public:
  explicit AssignmentStream(SimulatedFleet* fleet) : fleet_(fleet) {}

  void Open(const CoordinatorChannels& channels, size_t channel, const std::string& id, const std::string& session) {
    request_.set_worker_id(id);
    channels.Prepare(&ctx_, session, absl::ZeroDuration());
    channels.stub(static_cast<int>(channel))->async()->WatchAssignments(&ctx_, &request_, this);
    StartRead(&assignment_);
    StartCall();
  }
  void Cancel() { ctx_.TryCancel(); }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    fleet_->OnAssignment();
    StartRead(&assignment_);
  }
  // The last thing gRPC does with the stream; the fleet may delete it once this was counted.
  void OnDone(const grpc::Status& status) override { fleet_->OnStreamDone(status); }

 private:
  SimulatedFleet* fleet_;
  grpc::ClientContext ctx_;
  v1::WatchAssignmentsRequest request_;
  v1::Assignment assignment_;
};

SimulatedFleet::SimulatedFleet(const CoordinatorChannels* channels, FleetOptions options)
    : channels_(channels), options_(options), rng_(options.seed), sender_([this] { SendLoop(); }) {}

SimulatedFleet::~SimulatedFleet() { Stop(); }

absl::Status SimulatedFleet::Grow(int count) {
  size_t first = 0;
  {
    absl::MutexLock lock(&mu_);
    register_error_ = absl::OkStatus();
    first = workers_.size();
    for (int i = 0; i < count; ++i) workers_.push_back(std::make_unique<Worker>());
  }
  for (size_t i = first; i < first + static_cast<size_t>(count); ++i) {
    {
      absl::MutexLock lock(&mu_);
      auto room = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return registering_ < options_.register_concurrency || stopping_;
      };
      mu_.Await(absl::Condition(&room));
      if (stopping_) break;
      ++registering_;
    }
    Register(i);
  }
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return registering_ == 0; };
  mu_.Await(absl::Condition(&done));
  return register_error_;
}

void SimulatedFleet::Register(size_t index) {
  struct Call {
    grpc::ClientContext ctx;
    v1::RegisterWorkerRequest request;
    v1::RegisterWorkerResponse response;
  };
  auto* call = new Call;
  call->request.set_hostname(absl::StrCat("sim-host-", index / kWorkersPerHost));
  call->request.set_pid(static_cast<int>(1000 + index));
  call->request.set_name("sim");
  call->request.mutable_device()->set_kind(v1::Device::CPU);
  call->request.mutable_device()->set_description("simulated worker");
  channels_->Prepare(&call->ctx, "", options_.rpc_timeout);
  channels_->stub(static_cast<int>(index))
      ->async()
      ->RegisterWorker(&call->ctx, &call->request, &call->response, [this, call, index](grpc::Status status) {
        std::unique_ptr<Call> owned(call);
        if (status.ok()) OnRegistered(index, owned->response);
        absl::MutexLock lock(&mu_);
        if (!status.ok() && register_error_.ok()) {
          const absl::Status s = rpc::FromGrpc(status);
          register_error_ = absl::Status(s.code(), absl::StrCat("RegisterWorker: ", s.message()));
        }
        --registering_;
      });
}

void SimulatedFleet::OnRegistered(size_t index, const v1::RegisterWorkerResponse& resp) {
  AssignmentStream* stream = nullptr;
  {
    absl::MutexLock lock(&mu_);
    Worker& w = *workers_[index];
    w.id = resp.worker_id();
    w.session = resp.session_token();
    // The agent's floor on the interval.
    interval_ = absl::Milliseconds(std::max<int64_t>(50, resp.heartbeat_interval_ms()));
    lease_ = absl::Milliseconds(resp.lease_timeout_ms());
    ++live_;
    const double phase = std::uniform_real_distribution<double>(0, 1)(rng_);
    ScheduleLocked(index, absl::Now() + phase * interval_);
    if (options_.watch_assignments) {
      w.stream = std::make_unique<AssignmentStream>(this);
      stream = w.stream.get();
      ++streams_open_;
    }
  }
  if (stream != nullptr) stream->Open(*channels_, index, resp.worker_id(), resp.session_token());
}

void SimulatedFleet::ScheduleLocked(size_t worker, absl::Time at) {
  due_.push({at, worker});
  due_changed_.Signal();
}

void SimulatedFleet::SendLoop() {
  std::vector<size_t> batch;
  for (;;) {
    batch.clear();
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && (due_.empty() || due_.top().at > absl::Now())) {
        if (due_.empty()) {
          due_changed_.Wait(&mu_);
        } else {
          due_changed_.WaitWithDeadline(&mu_, due_.top().at);
        }
      }
      if (stopping_) return;
      const absl::Time now = absl::Now();
      while (!due_.empty() && due_.top().at <= now) {
        max_lag_ = std::max(max_lag_, now - due_.top().at);
        batch.push_back(due_.top().worker);
        due_.pop();
      }
      beats_in_flight_ += static_cast<int>(batch.size());
    }
    for (size_t w : batch) SendBeat(w);
  }
}

void SimulatedFleet::SendBeat(size_t worker) {
  auto* call = new BeatCall;
  std::string session;
  {
    absl::MutexLock lock(&mu_);
    call->request.set_worker_id(workers_[worker]->id);
    session = workers_[worker]->session;
  }
  call->worker = worker;
  channels_->Prepare(&call->ctx, session, options_.rpc_timeout);
  call->sent = absl::Now();
  channels_->stub(static_cast<int>(worker))
      ->async()
      ->Heartbeat(&call->ctx, &call->request, &call->response,
                  [this, call](grpc::Status status) { OnBeat(call, status); });
}

void SimulatedFleet::OnBeat(BeatCall* call, const grpc::Status& status) {
  std::unique_ptr<BeatCall> owned(call);
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  --beats_in_flight_;
  latencies_ms_.push_back(absl::ToDoubleMilliseconds(now - call->sent));
  if (!status.ok()) {
    ++counters_.heartbeat_errors;
  } else if (call->response.action() == v1::HeartbeatResponse::REREGISTER) {
    // Forgotten: it sends no more heartbeats.
    ++counters_.reregister;
    --live_;
    return;
  } else {
    ++counters_.heartbeats;
  }
  if (!stopping_) ScheduleLocked(call->worker, now + interval_);
}

void SimulatedFleet::OnStreamDone(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  if (!stopping_ || status.error_code() != grpc::StatusCode::CANCELLED) ++counters_.streams_ended;
  --streams_open_;
}

void SimulatedFleet::OnAssignment() {
  absl::MutexLock lock(&mu_);
  ++counters_.assignments;
}

int SimulatedFleet::live() const {
  absl::MutexLock lock(&mu_);
  return live_;
}

absl::Duration SimulatedFleet::heartbeat_interval() const {
  absl::MutexLock lock(&mu_);
  return interval_;
}

absl::Duration SimulatedFleet::lease_timeout() const {
  absl::MutexLock lock(&mu_);
  return lease_;
}

FleetCounters SimulatedFleet::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

std::vector<double> SimulatedFleet::TakeLatencies() {
  absl::MutexLock lock(&mu_);
  return std::exchange(latencies_ms_, {});
}

absl::Duration SimulatedFleet::TakeMaxSendLag() {
  absl::MutexLock lock(&mu_);
  return std::exchange(max_lag_, absl::ZeroDuration());
}

void SimulatedFleet::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && !sender_.joinable()) return;
    stopping_ = true;
    due_changed_.Signal();
  }
  if (sender_.joinable()) sender_.join();
  std::vector<AssignmentStream*> streams;
  {
    absl::MutexLock lock(&mu_);
    auto registered = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return registering_ == 0; };
    mu_.Await(absl::Condition(&registered));
    for (const auto& w : workers_) {
      if (w->stream != nullptr) streams.push_back(w->stream.get());
    }
  }
  // Outside the lock: a cancelled stream's OnDone takes it.
  for (AssignmentStream* s : streams) s->Cancel();
  absl::MutexLock lock(&mu_);
  auto quiet = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return beats_in_flight_ == 0 && streams_open_ == 0; };
  mu_.Await(absl::Condition(&quiet));
}

}  // namespace gradsync::bench

// A crowd of simulated workers speaking the worker protocol to one coordinator, for the scale
// benchmark. Each registers on its own (its own worker id and session), holds a WatchAssignments
// stream open and heartbeats on its own schedule the way the agent does
// (services/worker/agent_heartbeat.cc): a heartbeat, then the interval the coordinator gave,
// then the next, so each worker's phase drifts with its latencies; the first comes at a random
// point of the interval, as workers start at random times. None is a thread: all calls are
// asynchronous (gRPC's callback API) over the shared CoordinatorChannels, and one thread sends
// the heartbeats that fall due. Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sim_channels.h"

namespace gradsync::bench {

struct FleetOptions {
  // Registrations in flight at once while the fleet grows.
  int register_concurrency = 64;
  // Whether each worker holds its assignment stream open, as a real one does.
  bool watch_assignments = true;
  // The agent's deadline for every call.
  absl::Duration rpc_timeout = absl::Seconds(10);
  uint64_t seed = 1;
};

// Since the fleet started.
struct FleetCounters {
  int64_t heartbeats = 0;  // answered CONTINUE
  // Failed calls (deadline exceeded, unavailable, refused): the worker tries again an interval
  // later, as the agent does.
  int64_t heartbeat_errors = 0;
  // REREGISTER answers: the coordinator no longer knew the worker, which then stops, as a worker
  // that registers again would have lost its place.
  int64_t reregister = 0;
  // Assignment streams the coordinator ended while the fleet ran (NOT_FOUND once it forgot the
  // worker).
  int64_t streams_ended = 0;
  int64_t assignments = 0;  // assignments received (none while no job is queued)
};

class SimulatedFleet {
 public:
  // `channels` must outlive the fleet.
  SimulatedFleet(const CoordinatorChannels* channels, FleetOptions options);
  ~SimulatedFleet();  // Stop()
  SimulatedFleet(const SimulatedFleet&) = delete;
  SimulatedFleet& operator=(const SimulatedFleet&) = delete;

  // Registers `count` more workers, opens their streams and starts their heartbeats. Returns when
  // all registered, or the first registration's error (the others still join).
  absl::Status Grow(int count);
  // Workers registered and still heartbeating.
  int live() const;
  // What the coordinator's last RegisterWorker answer said.
  absl::Duration heartbeat_interval() const;
  absl::Duration lease_timeout() const;

  FleetCounters counters() const;
  // Latencies in ms of the heartbeats answered (or failed) since the last call.
  std::vector<double> TakeLatencies();
  // The most a due heartbeat waited to be sent since the last call: when it grows, the load
  // generator, not the coordinator, is short of CPU.
  absl::Duration TakeMaxSendLag();

  // Stops the heartbeats, cancels the streams and waits for every call to end. Idempotent.
  void Stop();

 private:
  struct Worker;
  struct Due {
    absl::Time at;
    size_t worker;
    bool operator>(const Due& o) const { return at > o.at; }
  };
  class AssignmentStream;
  struct BeatCall;

  void Register(size_t index);
  void OnRegistered(size_t index, const v1::RegisterWorkerResponse& resp);
  void SendBeat(size_t worker);
  void OnBeat(BeatCall* call, const grpc::Status& status);
  void OnStreamDone(const grpc::Status& status);
  void OnAssignment();
  void SendLoop();
  void ScheduleLocked(size_t worker, absl::Time at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CoordinatorChannels* channels_;
  const FleetOptions options_;

  mutable absl::Mutex mu_;
  absl::CondVar due_changed_;
  std::deque<std::unique_ptr<Worker>> workers_ ABSL_GUARDED_BY(mu_);
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
  FleetCounters counters_ ABSL_GUARDED_BY(mu_);
  std::vector<double> latencies_ms_ ABSL_GUARDED_BY(mu_);
  absl::Duration max_lag_ ABSL_GUARDED_BY(mu_);
  absl::Duration interval_ ABSL_GUARDED_BY(mu_) = absl::Seconds(1);
  absl::Duration lease_ ABSL_GUARDED_BY(mu_);
  int live_ ABSL_GUARDED_BY(mu_) = 0;
  // Calls not yet answered: registrations, heartbeats, open streams.
  int registering_ ABSL_GUARDED_BY(mu_) = 0;
  int beats_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int streams_open_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status register_error_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread sender_;
};

}  // namespace gradsync::bench

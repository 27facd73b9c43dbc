// The gRPC channels a crowd of simulated workers shares to reach one coordinator. A simulated
// worker is not a process: many share each channel (each channel its own TCP connection), and
// every call carries what a real worker's channel adds, the cluster token as
// "authorization: Bearer ..." and the worker's session as "gradsync-worker-session", set per
// call because the workers on one channel have different sessions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gradsync/v1/coordinator.grpc.pb.h"

namespace gradsync::bench {

class CoordinatorChannels {
 public:
  // `count` channels to `address`, each over a connection of its own. An empty `cluster_token`
  // sends no authorization (a coordinator without --cluster_token_file).
  CoordinatorChannels(const std::string& address, const std::string& cluster_token, int count);

  int count() const { return static_cast<int>(stubs_.size()); }
  // The stub of channel `i` mod count(). Thread-safe, as gRPC stubs are.
  v1::CoordinatorService::Stub* stub(int i) const { return stubs_[static_cast<size_t>(i) % stubs_.size()].get(); }

  // Adds the cluster token, the worker `session` (when not empty) and, when `timeout` is
  // positive, a deadline.
  void Prepare(grpc::ClientContext* ctx, const std::string& session, absl::Duration timeout) const;

 private:
  std::string authorization_;
  std::vector<std::unique_ptr<v1::CoordinatorService::Stub>> stubs_;
};

}  // namespace gradsync::bench

// Collective communication among the ranks of one generation.
//
// Costs with n ranks and a buffer of B bytes (ring algorithms): AllReduce sends 2(n-1)/n x B per
// rank in 2(n-1) steps; Broadcast sends B from the root to each rank.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/comm/kv_client.h"

namespace gradsync::comm {

// Not thread-safe: one thread issues collectives, in the same order on every rank.
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Collectives issued so far; heartbeats carry it so a stalled rank can be named.
  virtual int64_t sequence() const = 0;

  // In-place element-wise sum across ranks; every rank ends with identical bytes.
  virtual absl::Status AllReduceSum(std::span<float> data) = 0;
  virtual absl::Status AllReduceSum(std::span<double> data) = 0;
  // Copies `root`'s data to every rank.
  virtual absl::Status Broadcast(std::span<float> data, int root) = 0;
  virtual absl::Status Barrier() = 0;
};

struct GlooOptions {
  // Address this rank's TCP endpoints bind to and advertise (a host name or IP).
  std::string hostname = "127.0.0.1";
  // Bound on rendezvous and on every collective; past it the collective fails.
  absl::Duration timeout = absl::Minutes(5);
};

// Forms a Gloo full-mesh context of `size` ranks through `kv` (rank 0..size-1 must all call it).
// UNAVAILABLE (with Gloo's message) if a peer cannot be reached or rendezvous times out.
absl::StatusOr<std::unique_ptr<Communicator>> ConnectGloo(KvClient* kv, int rank, int size,
                                                          const GlooOptions& options);

}  // namespace gradsync::comm

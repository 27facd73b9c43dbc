// R simulated ranks going through the coordinator's key-value store the way Gloo's full-mesh
// connect does (gloo::rendezvous::Context::connectFullMesh, through KvGlooStore and a "gloo"
// PrefixStore): each rank sets one key holding the addresses of all its pairs, then, for every
// other rank i in order, waits for key i and gets it. That is R sets and 2 R (R - 1) waits and
// gets: O(R^2) calls, and, with a value of (R - 1) addresses, O(R^3) bytes. Every rank is a
// sequence of asynchronous calls, all R in flight at once over the shared CoordinatorChannels.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sim_channels.h"

namespace gradsync::bench {

// Bytes of one tcp address in Gloo's store values: sockaddr_storage and a sequence number
// (gloo/transport/tcp/address.h).
inline constexpr int64_t kGlooAddressBytes = 136;

struct RendezvousOptions {
  int ranks = 2;
  // Bytes in each rank's value: Gloo stores (ranks - 1) x kGlooAddressBytes.
  int64_t value_bytes = kGlooAddressBytes;
  // The namespace: a job the coordinator does not know is open to the cluster token alone.
  std::string job_id;
  int generation = 1;
  // Bounds each wait and get, as GlooOptions::timeout does.
  absl::Duration timeout = absl::Minutes(5);
};

struct RendezvousResult {
  absl::Duration total;        // until the last rank had every other rank's key
  absl::Duration median_rank;  // the median rank's time
  int64_t calls = 0;
  int64_t bytes = 0;  // values sent and received
};

// Runs one rendezvous; the first failed call's error (naming the rank and the call) if any fails.
absl::StatusOr<RendezvousResult> RunRendezvous(const CoordinatorChannels& channels, const RendezvousOptions& options);

}  // namespace gradsync::bench

// What every benchmark rank process starts with: its rank, and a communicator formed through the
// coordinator the launcher started.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/comm/kv_client.h"

namespace gradsync::bench {

struct RankEnv {
  int rank = 0;
  int ranks = 1;
  std::unique_ptr<comm::KvClient> kv;
  std::unique_ptr<comm::Communicator> comm;
};

// Connects rank `rank` of `ranks` through the coordinator at `coordinator` (namespace "bench",
// generation 1), presenting `cluster_token` (none when empty).
absl::StatusOr<RankEnv> ConnectRank(int rank, int ranks, const std::string& coordinator,
                                    const std::string& cluster_token, bool shared_memory = true);

// A key-value client for namespace "bench", `generation`: a second rendezvous apart from the first.
std::unique_ptr<comm::KvClient> NewBenchKv(const std::string& coordinator, const std::string& cluster_token,
                                           int generation);

// Parses "64", "64K", "8M", "1G" (bytes).
absl::StatusOr<int64_t> ParseSize(const std::string& text);
std::string FormatBytes(int64_t bytes);

}  // namespace gradsync::bench

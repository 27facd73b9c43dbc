// A script rank's place among the generation's ranks, and the environment its child gets from it:
// torchrun's variables, so that a script written for torchrun runs unmodified.
//
// The ranks meet in the generation's key-value namespace on the coordinator before any child
// starts: rank 0 chooses a free port on its host and publishes MASTER_ADDR:MASTER_PORT (where the
// script's torch.distributed store listens); every rank publishes its host, from which each
// derives its LOCAL_RANK, LOCAL_WORLD_SIZE and GROUP_RANK (the ranks of one host are a torchrun
// "node", numbered in the order of their lowest rank).
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/comm/kv_client.h"
#include "gradsync/v1/coordinator.pb.h"

namespace gradsync::worker {

struct ScriptLayout {
  std::string master_addr;
  int master_port = 0;
  // Each rank's host, by rank.
  std::vector<std::string> hosts;
};

// A TCP port free on `host` now (bound with port 0 and released), for rank 0's store.
absl::StatusOr<int> ChooseFreePort(const std::string& host);

// Publishes this rank's host (and, on rank 0, the master address it chose on `host`) in `kv`, and
// waits up to `timeout` for every rank's. DEADLINE_EXCEEDED naming what is missing; ABORTED as soon
// as `*abort` is set.
absl::StatusOr<ScriptLayout> MeetRanks(comm::KvClient* kv, int rank, int world_size, const std::string& host,
                                       absl::Duration timeout, const std::atomic<bool>* abort);

// "NAME=value" for every variable torchrun sets for a worker process, from the assignment and the
// layout: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK,
// ROLE_WORLD_SIZE, ROLE_NAME, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT,
// TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID (the job id), TORCHELASTIC_USE_AGENT_STORE
// (False: rank 0's script serves the store, as under torch.distributed.launch), and
// OMP_NUM_THREADS=1 unless `inherited_omp` (torchrun's default for more than one process on a host).
std::vector<std::string> TorchrunEnvironment(const v1::Assignment& a, const ScriptLayout& layout, bool inherited_omp);

}  // namespace gradsync::worker

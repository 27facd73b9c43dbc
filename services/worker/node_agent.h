// The node agent: `gradsync-worker --gpus all|N|LIST` or `--workers N` runs no worker itself but
// supervises one child gradsync-worker per GPU (or CPU worker) of the node, as torchrun runs a
// process per GPU in one pod per node. The children share the agent's container, so its /dev/shm
// and IPC namespace: NCCL's shared-memory and peer-to-peer transports work between them.
//
// Supervision, as the local cluster of `gradsync run` does it: a child that exits is started again
// after a backoff (1 s, doubling to 30 s, back to 1 s once a child ran a minute); it registers with
// the coordinator as a new worker. A child that exits with status 2 refused its flags, as every
// restart would: the agent stops the others and exits 2. SIGTERM or SIGINT to the agent reaches
// every child as SIGTERM (each stops at its next step boundary); the agent waits for them up to
// a grace period, kills what is left, and exits 0. Children die with the agent (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gradsync/core/child_process.h"
#include "node_layout.h"

namespace gradsync::worker {

struct NodeAgentOptions {
  std::vector<NodeWorker> workers;  // PlanNodeWorkers
  std::vector<std::string> env_defaults = TrainingEnvDefaults();
  absl::Duration first_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(30);
  // A child that ran this long before it exited is restarted after first_backoff again.
  absl::Duration stable_after = absl::Seconds(60);
  // How long the children get to stop after SIGTERM before SIGKILL. Below Kubernetes' default
  // termination grace (and the chart's 60 s), so the agent, not the kubelet, ends them.
  absl::Duration stop_grace = absl::Seconds(30);
  absl::Duration poll = absl::Milliseconds(100);
};

class NodeAgent {
 public:
  explicit NodeAgent(NodeAgentOptions options);
  ~NodeAgent();  // kills any child still running
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  // Starts every child and supervises them until shutdown is requested (gradsync/core/shutdown.h:
  // SIGTERM, SIGINT), then stops them. Returns main's exit code: 0 after a shutdown, 2 when a child
  // refused its flags, 1 when a child cannot be started (fork fails). Call once, from main's thread.
  int Run();

 private:
  struct Child {
    NodeWorker worker;
    pid_t pid = -1;
    absl::Time started;
    absl::Time restart_at;
    absl::Duration backoff;
    int restarts = 0;
  };
  absl::Status Start(Child& child);
  // Reaps `child` if it ended and schedules its restart. False when it refused its flags.
  bool Reap(Child& child, absl::Time now);
  // SIGTERM to every running child, wait up to stop_grace, SIGKILL the rest.
  void StopChildren();

  NodeAgentOptions options_;
  std::vector<Child> children_;
};

}  // namespace gradsync::worker

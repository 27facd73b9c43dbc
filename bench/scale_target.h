// The coordinator the scale benchmark loads: one of this build started on loopback with a state
// directory and tokens of its own (a LocalCluster without workers), or one already running.
// For its own coordinator it also reads what the coordinator says about itself: its process in
// /proc, the workers it declared lost (its log) and the workers it counts (its /metrics).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gradsync/cluster/local_cluster.h"

namespace gradsync::bench {

class ScaleTarget {
 public:
  // Starts gradsync-coordinator from this binary's directory, with the cluster, job and metrics
  // tokens a local cluster has, under a new temporary state directory.
  static absl::StatusOr<std::unique_ptr<ScaleTarget>> StartLocal();
  // A coordinator at `address`; `token_file` holds its cluster token (empty: send none).
  static absl::StatusOr<std::unique_ptr<ScaleTarget>> Attach(const std::string& address, const std::string& token_file);

  const std::string& address() const { return address_; }
  const std::string& cluster_token() const { return cluster_token_; }
  // The coordinator's process; -1 when it is not ours.
  pid_t pid() const { return pid_; }
  // Where its state and log are; empty when it is not ours.
  const std::string& state_dir() const { return state_dir_; }

  // How many workers its log says it declared lost ("... lost: no heartbeat for ..."); -1 when
  // its log is not ours.
  int LostWorkers() const;
  // The workers registered, idle or assigned, by its /metrics (gradsync_workers); -1 when its
  // metrics are not ours, an error when they cannot be read.
  absl::StatusOr<int> RegisteredWorkers() const;

 private:
  std::unique_ptr<cluster::LocalCluster> cluster_;
  std::string address_;
  std::string cluster_token_;
  std::string metrics_token_;
  std::string state_dir_;
  pid_t pid_ = -1;
};

}  // namespace gradsync::bench

// A whole gradsync cluster on this machine: a coordinator and N workers as child processes on
// loopback, with their logs under <state_dir>/logs, fresh tokens under <state_dir>/tokens
// (local_tokens.h) that every service requires, and the cluster file that finds them
// (gradsync/cli/local_cluster_file.h). Used by `gradsync run` and `gradsync local up`.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/device/device_request.h"

namespace gradsync::cluster {

struct LocalClusterOptions {
  int workers = 1;
  std::string state_dir;
  // The coordinator's data roots (--data_root): job data must lie in them, and relative data paths
  // start at the first. Empty: the current directory. Weights and checkpoints go to
  // <state_dir>/artifacts/<job id>; the metrics service keeps the jobs' series in
  // <state_dir>/metrics/series.db, so a metrics service restarted here serves them again.
  std::vector<std::string> data_roots;
  int coordinator_port = 0;  // 0: a free port
  int rest_port = 0;
  int metrics_port = 0;  // the metrics service's /metrics
  bool with_metrics = true;
  // The workers' --device: auto gives worker i GPU i mod (GPUs visible), one GPU per worker
  // as far as they go (as torchrun's local ranks), or the CPU when there is none; cuda the same
  // but refused without a GPU; cpu or an existing cuda:N goes to every worker as is.
  device::DeviceRequest device;
  // Worker i runs bound to part i of this process's CPUs split evenly (gradsync/core/cpu_set.h):
  // ranks synchronise every step, and unbound ones wait on each other more. No binding when
  // there are fewer CPUs than workers.
  bool bind_cpus = true;
  absl::Duration start_timeout = absl::Seconds(30);
  // Recorded in the cluster file as the process that `gradsync local down` signals; -1: none.
  pid_t supervisor_pid = -1;
  // Where gradsync-coordinator, gradsync-metrics and gradsync-worker are; empty: beside this
  // process's executable.
  std::string binary_dir;
  // How Supervise starts an exited child again: after `restart_backoff`, doubling up to
  // `max_restart_backoff` while it keeps exiting within `healthy_after` of its start, and from
  // `restart_backoff` again once it ran that long (as the node agent and Kubernetes back off).
  absl::Duration restart_backoff = absl::Seconds(1);
  absl::Duration max_restart_backoff = absl::Seconds(30);
  absl::Duration healthy_after = absl::Minutes(1);
};

// The --device worker `index` of a local cluster gets, with `gpus` GPUs visible.
// FAILED_PRECONDITION, naming --device, for a GPU this machine does not have.
absl::StatusOr<device::DeviceRequest> LocalWorkerDevice(const device::DeviceRequest& device, int index, int gpus);

class LocalCluster {
 public:
  explicit LocalCluster(LocalClusterOptions options);
  ~LocalCluster();  // stops everything still running

  // Writes new tokens, starts the coordinator, waits until it serves, starts the workers, then
  // writes the cluster file.
  absl::Status Start();
  // Stops the coordinator, the workers, then the rest; removes the cluster file. Idempotent.
  void Stop();
  // OK while every child runs; otherwise names the first one that exited.
  absl::Status CheckAlive() const;
  // Starts again every child that exited, the way Kubernetes restarts a pod, each after its
  // backoff (the options): services on the ports they had, workers as new registrations (spares);
  // rewrites the cluster file. Returns the names started again in this call. A worker is started
  // again however often it exits: its crash loop only slows down. The cluster is given up (an
  // error naming the service and its log's end) only when the coordinator or the metrics service
  // exited `max_quick_exits` times in a row, each time within `healthy_after` of its start.
  absl::StatusOr<std::vector<std::string>> Supervise(int max_quick_exits = 20);

  std::string coordinator_address() const { return address_; }
  // Every service address by name: coordinator, rest, coordinatorMetrics, metrics (gRPC),
  // metricsHttp (/metrics), metricsApi (JSON series).
  const std::map<std::string, std::string>& endpoints() const { return endpoints_; }
  // The token files by name (kAuthToken, kClusterToken, kMetricsToken in local_tokens.h), once
  // Start has written them.
  const std::map<std::string, std::string>& token_files() const { return token_files_; }
  std::string log_dir() const;
  std::vector<pid_t> pids() const;
  // The last lines of every child's log, for failure reports.
  std::string RecentLogs(int lines) const;

 private:
  struct Child {
    std::string name;
    std::vector<std::string> argv;
    pid_t pid = -1;
    std::string log;
    std::vector<std::string> env;  // ChildSpec::env_defaults
    int restarts = 0;
    // The crash-loop policy's state: when it last started, its current backoff, the exits in a
    // row that came within healthy_after, and when it starts again (while waiting to).
    absl::Time started;
    absl::Duration backoff;
    int quick_exits = 0;
    std::optional<absl::Time> restart_at;
  };
  // An exited child: when it starts again, or an error when it is a service that keeps exiting.
  absl::Status ScheduleRestart(Child& c, int max_quick_exits, absl::Time now) const;
  std::string Binaries() const;
  // Pins a service's flags to the ports it bound, so a restart listens where clients look.
  void PinPorts(Child& child, const std::map<std::string, std::string>& flag_to_address);

  absl::Status StartChild(const std::string& name, std::vector<std::string> argv);
  // The parts of Start, in order; the metrics service returns its gRPC address for the workers.
  absl::Status StartCoordinator();
  absl::StatusOr<std::string> StartMetricsService();
  absl::Status StartWorkers(const std::string& metrics);
  // "--<flag>=<the token file `name`>".
  std::string TokenFlag(const std::string& flag, const std::string& name) const;
  // Waits for a service's endpoints file while the service runs.
  absl::StatusOr<std::map<std::string, std::string>> AwaitEndpoints(const std::string& path,
                                                                    const std::string& name) const;
  absl::Status WriteClusterFile() const;
  uint64_t SupervisorStart() const;

  LocalClusterOptions options_;
  std::string address_;
  std::map<std::string, std::string> endpoints_;
  std::map<std::string, std::string> token_files_;
  std::vector<Child> children_;  // the coordinator first
};

}  // namespace gradsync::cluster

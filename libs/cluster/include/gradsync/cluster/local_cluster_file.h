// <state_dir>/endpoints.json: how a running local cluster is found (its addresses, the processes
// to signal). Its one writer is LocalCluster: it removes a stale file when starting, writes the
// file once every child has started (the file's appearance says the cluster is ready), rewrites
// it after a restart and removes it once stopped. Every write replaces the file atomically, so a
// reader sees a whole file or none.
//
//   {
//     "coordinator": "127.0.0.1:PORT",   every endpoint by name (LocalCluster::endpoints()), top
//     "metricsApi": "127.0.0.1:PORT",    level, one a line: scripts take them out with sed
//     "workers": 2,
//     "pid": 1234,                       the `gradsync local up` supervisor; absent under `run`
//     "pidStart": 987654,                its start time (/proc/<pid>/stat), against pid reuse
//     "logs": "/state/dir/logs",
//     "pids": [10, 11, 12, 13],          coordinator, metrics service, worker-0, worker-1, ...;
//                                        a restarted child's new pid
//     "tokenFiles": {                    the cluster's tokens (readable by its user alone): the
//       "auth": "/state/dir/tokens/auth.token",     job APIs', the workers' and the one that
//       "cluster": "...", "metrics": "..."}         reads /metrics and the metrics JSON API
//   }
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync::cluster {

struct LocalClusterFile {
  std::map<std::string, std::string> endpoints;
  int workers = 0;
  pid_t supervisor_pid = -1;  // -1: none (`gradsync run` supervises in its own process)
  // The supervisor's start time (ProcessStartTime): a pid names it only while they agree.
  uint64_t supervisor_start = 0;
  std::string log_dir;
  std::vector<pid_t> pids;  // the children, the coordinator first
  // The token files by name: "auth", "cluster", "metrics". Empty for a cluster without tokens.
  std::map<std::string, std::string> token_files;
  // The directories its coordinator reads job data in (--data-root), absolute.
  std::vector<std::string> data_roots;
  // The state directory it was read from (not written: the file lies in it).
  std::string state_dir;
};

std::string LocalClusterFilePath(const std::string& state_dir);

// The file's text, as written and as `gradsync local up` prints it.
std::string LocalClusterFileJson(const LocalClusterFile& file);

// Replaces <state_dir>/endpoints.json atomically. INTERNAL naming the file.
absl::Status WriteLocalClusterFile(const std::string& state_dir, const LocalClusterFile& file);

// NOT_FOUND when no cluster file exists (no local cluster is ready in `state_dir`); DATA_LOSS
// naming the file when it is not such a file.
absl::StatusOr<LocalClusterFile> ReadLocalClusterFile(const std::string& state_dir);

void RemoveLocalClusterFile(const std::string& state_dir);

// The string and number fields of a small JSON object file, numbers as integers (the endpoints
// files through which the services announce their ports). NOT_FOUND or DATA_LOSS naming the file.
absl::Status ReadJsonFields(const std::string& path, std::vector<std::pair<std::string, std::string>>* out);

}  // namespace gradsync::cluster

// Child processes of the CLI: start with output to a log file, stop with SIGTERM then SIGKILL.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gradsync::cli {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is the executable's path
  std::string log_path;           // stdout and stderr, appended
  // "NAME=value" entries added to the child's environment unless this process has NAME set.
  std::vector<std::string> env_defaults = {};
};

// What every process that trains needs before its BLAS loads: OpenBLAS reads
// OPENBLAS_NUM_THREADS once, as it loads, and starts that many threads minus one; threads it
// starts and that then stay unused still wake and yield, taking time from the cores other ranks
// compute on. The worker's and the benchmarks' --blas_threads default is 1.
inline const std::vector<std::string>& TrainingEnvDefaults() {
  static const std::vector<std::string> env = {"OPENBLAS_NUM_THREADS=1"};
  return env;
}

// Starts the child. It gets SIGKILL if this process dies, so no child outlives its parent.
absl::StatusOr<pid_t> Spawn(const ChildSpec& spec);

// True while `pid` is running (a zombie child is reaped and counts as gone).
bool Alive(pid_t pid);

// SIGTERM to each, wait up to `grace` for all, then SIGKILL the rest and reap them.
void StopAll(const std::vector<pid_t>& pids, absl::Duration grace);

// The directory holding gradsync's binaries: this executable's own directory.
std::string BinaryDir();

// The last `lines` lines of a text file (empty if unreadable).
std::string TailFile(const std::string& path, int lines);

}  // namespace gradsync::cli

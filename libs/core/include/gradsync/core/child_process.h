// Child processes of a supervisor (the CLI's local cluster, the benchmarks' launcher, the worker's
// node agent): start one, learn whether and how it ended, stop many with SIGTERM then SIGKILL.
//
// Only the thread that spawns children should wait for them: Alive and ReapIfExited reap, and a
// child's exit status can be read once.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gradsync {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is the executable's path
  // stdout and stderr, appended. Empty: the child writes to this process's stdout and stderr (a
  // container's log, where every child's lines belong).
  std::string log_path;
  // "NAME=value" entries added to the child's environment unless this process has NAME set.
  std::vector<std::string> env_defaults = {};
  // "NAME=value" entries set in the child's environment whatever this process has (after
  // env_defaults).
  std::vector<std::string> env = {};
  // Where the child starts; empty: this process's working directory.
  std::string working_dir = {};
  // Descriptors the child's stdout and stderr go to (the write ends of pipes, say), instead of
  // log_path; -1: log_path's rule. The caller keeps and closes its own.
  int stdout_fd = -1;
  int stderr_fd = -1;
};

// What every process that trains needs before its BLAS loads: OpenBLAS reads
// OPENBLAS_NUM_THREADS once, as it loads, and starts that many threads minus one; threads it
// starts and that then stay unused still wake and yield, taking time from the cores other ranks
// compute on. The worker's and the benchmarks' --blas_threads default is 1.
inline const std::vector<std::string>& TrainingEnvDefaults() {
  static const std::vector<std::string> env = {"OPENBLAS_NUM_THREADS=1"};
  return env;
}

// Starts the child in its own process group (a Ctrl-C at the terminal reaches the supervisor
// alone, which decides how its children stop). It gets SIGKILL if this process dies, so no child
// outlives its parent. INTERNAL when the log cannot be opened or fork fails; a failed exec shows
// as the child exiting with status 127.
absl::StatusOr<pid_t> Spawn(const ChildSpec& spec);

// True while `pid` is running (a zombie child is reaped and counts as gone).
bool Alive(pid_t pid);

// If `pid`, a child of this process, has ended: reaps it and returns its wait status (decode it
// with WIFEXITED and friends, or DescribeWaitStatus). nullopt while it runs. A pid that is not
// our child counts as ended, with status 0.
std::optional<int> ReapIfExited(pid_t pid);

// "exited with status 2", "killed by signal 9 (Killed)".
std::string DescribeWaitStatus(int status);

// SIGTERM to each, wait up to `grace` for all, then SIGKILL the rest and reap them.
void StopAll(const std::vector<pid_t>& pids, absl::Duration grace);

// Stops `pid`, a child that leads its own process group (Spawn's), with everything in that group:
// SIGTERM to the group, up to `grace` for the leader to exit, then SIGKILL to the group. The
// leader is reaped and its wait status returned (nullopt if it was reaped already); whatever is
// left of the group (grandchildren that outlived the leader) gets SIGKILL either way.
std::optional<int> StopGroup(pid_t pid, absl::Duration grace);

// The executable `program` names, as execvp would find it: a name with a '/' is a path (relative:
// from `working_dir`), any other is looked up in the colon-separated `path` (PATH). NOT_FOUND or
// FAILED_PRECONDITION saying what was tried.
absl::StatusOr<std::string> FindProgram(const std::string& program, const std::string& path,
                                        const std::string& working_dir);
// When process `pid` started, in clock ticks since boot (/proc/<pid>/stat's starttime): with the
// pid, what names one process for good, since pids are reused. nullopt when there is no such
// process.
std::optional<uint64_t> ProcessStartTime(pid_t pid);

// The directory holding gradsync's binaries: this executable's own directory.
std::string BinaryDir();

// The last `lines` lines of a text file (empty if unreadable).
std::string TailFile(const std::string& path, int lines);

}  // namespace gradsync

// A script rank's child process: the command started in a process group of its own, with its
// stdout and stderr read line by line into the rank's job log, stopped with its whole group.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/core/child_process.h"

namespace gradsync::worker {

// One line the child wrote, without its newline; `stream` is "stdout" or "stderr". Called on the
// child's reader threads, one line at a time per stream.
using ChildLine = std::function<void(std::string_view stream, std::string_view line)>;

class ScriptChild {
 public:
  // Starts `spec` (its stdout_fd and stderr_fd are set here). INTERNAL when pipes or fork fail.
  static absl::StatusOr<std::unique_ptr<ScriptChild>> Start(ChildSpec spec, ChildLine on_line);
  // Stop(0) if it still runs, then joins the readers.
  ~ScriptChild();
  ScriptChild(const ScriptChild&) = delete;
  ScriptChild& operator=(const ScriptChild&) = delete;

  pid_t pid() const { return pid_; }
  // The wait status once the child has ended (reaped here), nullopt while it runs.
  std::optional<int> Poll();
  // SIGTERM to the group, SIGKILL after `grace`; returns the leader's wait status. Whatever the
  // child left in its group is killed too. Idempotent.
  int Stop(absl::Duration grace);
  // Waits until the child's stdout and stderr are closed (every line delivered), at most `timeout`
  // (a grandchild may hold them open); true when they are.
  bool DrainOutput(absl::Duration timeout);

 private:
  ScriptChild(pid_t pid, int out, int err, ChildLine on_line);
  void Read(int fd, std::string_view stream);

  const pid_t pid_;
  std::optional<int> status_;
  ChildLine on_line_;
  std::atomic<int> open_streams_{2};
  std::thread out_reader_, err_reader_;  // last: they start once the members above exist
};

}  // namespace gradsync::worker

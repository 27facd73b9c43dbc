// What /proc says about a process: CPU time used, resident memory and threads. Linux only.
#pragma once

#include <sys/types.h>

#include "absl/status/statusor.h"

namespace gradsync::bench {

struct ProcStats {
  double cpu_seconds = 0;  // user + system, all threads
  int64_t rss_bytes = 0;
  int64_t peak_rss_bytes = 0;  // VmHWM: the most resident memory the process has held
  int threads = 0;
};

// NOT_FOUND naming the pid when the process is gone or /proc cannot be read.
absl::StatusOr<ProcStats> ReadProcStats(pid_t pid);

}  // namespace gradsync::bench

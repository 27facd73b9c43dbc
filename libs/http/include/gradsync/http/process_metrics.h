// The series every gradsync service serves about itself beside its own: each passes ProcessMetrics()
// with its collectables to StartMetricsServer.
//
//   gradsync_build_info{version,commit,cuda} 1     what the binary was built from (build_info.h)
//   process_cpu_seconds_total                      user and system CPU time (counter)
//   process_resident_memory_bytes                  resident set size
//   process_open_fds                               open file descriptors
//   process_start_time_seconds                     start time, seconds since the Unix epoch
//
// The process_* series are those of the Prometheus client libraries, read from /proc/self at
// each scrape; one whose /proc file cannot be read is left out of that scrape.
#pragma once

#include <memory>

#include "prometheus/collectable.h"

namespace gradsync::http {

// The process's one instance, alive until the process exits. Collect() may run on any thread.
std::shared_ptr<prometheus::Collectable> ProcessMetrics();

}  // namespace gradsync::http

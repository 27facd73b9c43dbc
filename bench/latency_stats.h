// Summaries of latency samples for the scale benchmark's tables.
#pragma once

#include <cstdint>
#include <vector>

namespace gradsync::bench {

struct LatencySummary {
  int64_t count = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

// Nearest-rank percentiles of `samples_ms` (reordered in place); all zero when empty.
LatencySummary Summarize(std::vector<double>& samples_ms);

}  // namespace gradsync::bench

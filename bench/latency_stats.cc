#include "latency_stats.h"

#include <algorithm>
#include <cmath>

namespace gradsync::bench {
namespace {

// The smallest sample at or above fraction `q` of them (nearest rank).
double Quantile(std::vector<double>& samples, double q) {
  const auto n = static_cast<double>(samples.size());
  const auto rank = static_cast<size_t>(std::max(1.0, std::ceil(q * n))) - 1;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(rank), samples.end());
  return samples[rank];
}

}  // namespace

LatencySummary Summarize(std::vector<double>& samples_ms) {
  LatencySummary s;
  if (samples_ms.empty()) return s;
  s.count = static_cast<int64_t>(samples_ms.size());
  s.max_ms = *std::max_element(samples_ms.begin(), samples_ms.end());
  s.p99_ms = Quantile(samples_ms, 0.99);
  s.p50_ms = Quantile(samples_ms, 0.50);
  return s;
}

}  // namespace gradsync::bench

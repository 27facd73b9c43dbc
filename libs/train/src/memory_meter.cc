#include "gradsync/train/memory_meter.h"

#include <algorithm>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"

namespace gradsync::train {

int64_t PeakRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view v = line;
    if (!absl::ConsumePrefix(&v, "VmHWM:")) continue;
    absl::ConsumeSuffix(&v, " kB");
    int64_t kb = 0;
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(v), &kb) ? kb * 1024 : 0;
  }
  return 0;
}

bool ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return out.good();
}

void MemoryMeter::Start(bool on_gpu) {
  on_gpu_ = on_gpu;
  peak_device_ = 0;
  ResetPeakRss();  // best effort: without it the peak covers the process's whole life
}

v1::RankMemory MemoryMeter::Sample(int rank, const MemoryFootprint& held) {
  if (on_gpu_) {
    if (absl::StatusOr<int64_t> used = DeviceBytesInUse(); used.ok()) peak_device_ = std::max(peak_device_, *used);
  }
  v1::RankMemory m;
  m.set_rank(rank);
  m.set_param_bytes(held.params);
  m.set_grad_bytes(held.grads);
  m.set_optimizer_bytes(held.optimizer);
  m.set_peak_rss_bytes(PeakRssBytes());
  m.set_peak_device_bytes(peak_device_);
  return m;
}

}  // namespace gradsync::train

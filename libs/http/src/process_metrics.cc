#include "gradsync/http/process_metrics.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/numbers.h"
#include "gradsync/core/build_info.h"
#include "prometheus/metric_family.h"

namespace gradsync::http {
namespace {

// Fields of /proc/self/stat (proc(5)) counted from 1, and the position of the state field, the
// first after the command name: that name is in parentheses and may hold spaces.
constexpr int kStateField = 3;
constexpr int kUtimeField = 14;
constexpr int kStimeField = 15;
constexpr int kStartTimeField = 22;
constexpr int kRssField = 24;

struct ProcStat {
  double cpu_seconds = 0;
  double resident_bytes = 0;
  double start_after_boot_seconds = 0;
};

std::string ReadProcFile(const char* path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::optional<ProcStat> ReadProcStat() {
  const std::string stat = ReadProcFile("/proc/self/stat");
  const size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(name_end + 1));
  const std::vector<std::string> fields(std::istream_iterator<std::string>(rest), {});
  double utime = 0, stime = 0, start = 0, rss = 0;
  const auto field = [&fields](int n, double* value) {
    const size_t at = static_cast<size_t>(n - kStateField);
    return at < fields.size() && absl::SimpleAtod(fields[at], value);
  };
  if (!field(kUtimeField, &utime) || !field(kStimeField, &stime) || !field(kStartTimeField, &start) ||
      !field(kRssField, &rss)) {
    return std::nullopt;
  }
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return ProcStat{(utime + stime) / ticks, rss * static_cast<double>(::sysconf(_SC_PAGESIZE)), start / ticks};
}

// The boot time, seconds since the Unix epoch (the btime line of /proc/stat).
std::optional<double> BootTime() {
  std::istringstream in(ReadProcFile("/proc/stat"));
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime" && in >> value) return value;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

std::optional<double> OpenFds() {
  std::error_code ec;
  double count = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) ++count;
  if (ec) return std::nullopt;
  return count;
}

prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type, double value) {
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  return {name, help, type, {metric}};
}

prometheus::MetricFamily BuildInfoFamily() {
  const BuildInfo& info = GetBuildInfo();
  prometheus::MetricFamily family = Family(
      "gradsync_build_info", "1, labelled with the version, git commit and CUDA toolkit (or none) of this binary",
      prometheus::MetricType::Gauge, 1);
  family.metric[0].label = {
      {"commit", std::string(info.commit)}, {"cuda", std::string(info.cuda)}, {"version", std::string(info.version)}};
  return family;
}

class ProcessCollector : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    using prometheus::MetricType;
    std::vector<prometheus::MetricFamily> families = {BuildInfoFamily()};
    if (const std::optional<ProcStat> stat = ReadProcStat()) {
      families.push_back(Family("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                                MetricType::Counter, stat->cpu_seconds));
      families.push_back(Family("process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::Gauge,
                                stat->resident_bytes));
      if (const std::optional<double> boot = BootTime()) {
        families.push_back(Family("process_start_time_seconds",
                                  "Start time of the process since unix epoch in seconds.", MetricType::Gauge,
                                  *boot + stat->start_after_boot_seconds));
      }
    }
    if (const std::optional<double> fds = OpenFds()) {
      families.push_back(Family("process_open_fds", "Number of open file descriptors.", MetricType::Gauge, *fds));
    }
    return families;
  }
};

}  // namespace

std::shared_ptr<prometheus::Collectable> ProcessMetrics() {
  static const auto* const collector = new std::shared_ptr<prometheus::Collectable>(new ProcessCollector());
  return *collector;
}

}  // namespace gradsync::http

#include "proc_stats.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gradsync::bench {
namespace {

// utime and stime of /proc/<pid>/stat: fields 14 and 15, counted after the command name, which
// is in parentheses and may itself hold spaces.
bool ReadCpuSeconds(pid_t pid, double* seconds) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(in, line)) return false;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  const std::vector<std::string> fields = absl::StrSplit(line.substr(close + 2), ' ');
  // fields[0] is field 3 (state), so utime (14) and stime (15) are fields[11] and fields[12].
  int64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) || !absl::SimpleAtoi(fields[12], &stime)) {
    return false;
  }
  *seconds = static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  return true;
}

// A "<name>:   <n> kB" line of /proc/<pid>/status, in bytes.
bool ReadKilobytes(absl::string_view line, absl::string_view name, int64_t* bytes) {
  if (!absl::ConsumePrefix(&line, name)) return false;
  absl::ConsumeSuffix(&line, " kB");
  int64_t n = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &n)) return false;
  *bytes = n * 1024;
  return true;
}

// VmRSS, VmHWM and Threads of /proc/<pid>/status.
bool ReadStatus(pid_t pid, ProcStats* out) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  bool rss = false, peak = false, threads = false;
  while (std::getline(in, line)) {
    absl::string_view v = line;
    int64_t n = 0;
    if (ReadKilobytes(v, "VmRSS:", &out->rss_bytes)) {
      rss = true;
    } else if (ReadKilobytes(v, "VmHWM:", &out->peak_rss_bytes)) {
      peak = true;
    } else if (absl::ConsumePrefix(&v, "Threads:")) {
      threads = absl::SimpleAtoi(absl::StripAsciiWhitespace(v), &n);
      out->threads = static_cast<int>(n);
    }
  }
  return rss && peak && threads;
}

}  // namespace

absl::StatusOr<ProcStats> ReadProcStats(pid_t pid) {
  ProcStats s;
  if (!ReadCpuSeconds(pid, &s.cpu_seconds) || !ReadStatus(pid, &s)) {
    return absl::NotFoundError(absl::StrCat("process ", pid, ": cannot read /proc/", pid));
  }
  return s;
}

}  // namespace gradsync::bench

#include "gradsync/core/cpu_set.h"

#include <dirent.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gradsync {
namespace {

constexpr int kMaxCpu = CPU_SETSIZE - 1;

bool ParseCpu(absl::string_view s, int* cpu) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         absl::SimpleAtoi(s, cpu) && *cpu >= 0 && *cpu <= kMaxCpu;
}

// EINVAL: none of `cpus` is in the cgroup's cpuset (a container limited to other CPUs).
absl::Status Refused(const std::vector<int>& cpus, int tid, int err) {
  const std::string what =
      absl::StrCat("cpu binding to ", FormatCpuList(cpus), " (thread ", tid, "): ", std::strerror(err));
  return err == EINVAL ? absl::FailedPreconditionError(
                             absl::StrCat(what, "; this process may use ", FormatCpuList(AllowedCpus())))
                       : absl::InternalError(what);
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpuList(const std::string& text) {
  std::vector<int> cpus;
  if (text.empty()) return absl::InvalidArgumentError("cpu list: empty");
  for (absl::string_view piece : absl::StrSplit(text, ',')) {
    const std::vector<absl::string_view> ends = absl::StrSplit(piece, absl::MaxSplits('-', 1));
    int lo = 0, hi = 0;
    const bool ok = ParseCpu(ends[0], &lo) && (ends.size() == 1 ? (hi = lo, true) : ParseCpu(ends[1], &hi)) && lo <= hi;
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("cpu list \"", text, "\": \"", piece,
                                                     "\" is not a CPU number or a range a-b (0 to ", kMaxCpu, ")"));
    }
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    parts.push_back(j == i ? absl::StrCat(cpus[i]) : absl::StrCat(cpus[i], "-", cpus[j]));
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
}

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c <= kMaxCpu; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

std::vector<int> CpuShare(const std::vector<int>& cpus, int parts, int index) {
  const int n = static_cast<int>(cpus.size());
  if (parts <= 0 || index < 0 || index >= parts || n < parts) return {};
  const int base = n / parts, extra = n % parts;
  const int begin = index * base + std::min(index, extra);
  const int size = base + (index < extra ? 1 : 0);
  return std::vector<int>(cpus.begin() + begin, cpus.begin() + begin + size);
}

std::string ShareOfAllowedCpus(int parts, int index) { return FormatCpuList(CpuShare(AllowedCpus(), parts, index)); }

absl::Status BindProcessToCpus(const std::vector<int>& cpus) {
  if (cpus.empty()) return absl::InvalidArgumentError("cpu binding: no CPUs given");
  const int configured = get_nprocs_conf();
  std::vector<int> missing;
  for (int c : cpus) {
    if (c < 0 || c >= configured || c > kMaxCpu) missing.push_back(c);
  }
  if (!missing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("cpu binding: this machine has no CPU ", FormatCpuList(missing),
                                                      " (it has 0-", configured - 1, ")"));
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  // Affinity is per thread: bind each one running now (sched_setaffinity takes a thread id).
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) {
    return sched_setaffinity(0, sizeof(set), &set) == 0 ? absl::OkStatus() : Refused(cpus, 0, errno);
  }
  absl::Status status;
  while (status.ok()) {
    const dirent* e = readdir(dir);
    if (e == nullptr) break;
    int tid = 0;
    if (!absl::SimpleAtoi(e->d_name, &tid)) continue;
    // A thread may exit meanwhile (ESRCH): nothing to bind then.
    if (sched_setaffinity(tid, sizeof(set), &set) != 0 && errno != ESRCH) status = Refused(cpus, tid, errno);
  }
  closedir(dir);
  return status;
}

absl::StatusOr<std::vector<int>> BindProcessToCpuList(const std::string& list) {
  absl::StatusOr<std::vector<int>> cpus = ParseCpuList(list);
  if (!cpus.ok()) return cpus.status();
  if (absl::Status s = BindProcessToCpus(*cpus); !s.ok()) return s;
  return cpus;
}

}  // namespace gradsync

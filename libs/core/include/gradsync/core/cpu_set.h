// CPU sets: Linux cpu lists ("0-3,6", as taskset -c and cgroups write them), the CPUs this
// process may run on, an even split of them among the workers of one host, and binding a
// process to its share.
//
// Why bind: ranks that share a host synchronise every step, so a step takes as long as the
// slowest rank. Unbound, the scheduler moves ranks between cores and stacks a rank with another's
// communication thread; measured with 2 ranks on 2 cores (gpt-tiny, bench/README.md), binding
// each rank to its own core cut the cost of synchronising from 5-10% of a step to about 2%.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync {

// Sorted, without duplicates. INVALID_ARGUMENT naming the bad piece for anything else than
// comma-separated CPU numbers and ranges "a-b" with a <= b.
absl::StatusOr<std::vector<int>> ParseCpuList(const std::string& text);
// The shortest list form: {0, 1, 2, 3, 6} -> "0-3,6".
std::string FormatCpuList(const std::vector<int>& cpus);

// The CPUs this process may run on (its affinity mask), sorted; empty if the system will not say.
std::vector<int> AllowedCpus();

// Part `index` of `cpus` split into `parts` contiguous parts as even as possible (the first
// cpus.size() % parts parts one CPU larger). Empty when there are fewer CPUs than parts: then
// sharing cores is the scheduler's job.
std::vector<int> CpuShare(const std::vector<int>& cpus, int parts, int index);

// The cpu list of process `index` of `parts` sharing this process's CPUs (what a launcher passes
// as --cpus), or "" when there are fewer CPUs than parts.
std::string ShareOfAllowedCpus(int parts, int index);

// Binds every thread of this process to `cpus`; threads started later inherit it.
// INVALID_ARGUMENT for an empty set; FAILED_PRECONDITION naming CPUs the machine does not have,
// or when the container's cpuset holds none of them.
absl::Status BindProcessToCpus(const std::vector<int>& cpus);
// ParseCpuList, then BindProcessToCpus; the CPUs bound to. Errors as those two.
absl::StatusOr<std::vector<int>> BindProcessToCpuList(const std::string& list);

}  // namespace gradsync

#include "node_layout.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gradsync/core/cpu_set.h"

namespace gradsync::worker {

namespace {

constexpr int kMaxPort = 65535;

absl::Status NoSuchGpu(const std::string& request, int visible, bool built_with_cuda) {
  if (visible == 0) {
    return absl::FailedPreconditionError(absl::StrCat("--gpus ", request, ": no GPU is visible on this machine",
                                                      built_with_cuda ? "" : " (this build has no CUDA)",
                                                      "; use --workers N for CPU workers"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "--gpus ", request, ": ", visible, " GPUs are visible on this machine (ordinals 0-", visible - 1, ")"));
}

}  // namespace

absl::StatusOr<std::vector<int>> SelectGpus(const std::string& request, int visible, bool built_with_cuda) {
  if (request.empty()) return absl::InvalidArgumentError("--gpus: expected all, a count N or a list such as 0,2,5");
  std::vector<int> out;
  int count = 0;
  if (request == "all") {
    count = visible;
  } else if (request.find(',') == std::string::npos && absl::SimpleAtoi(request, &count)) {
    if (count < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--gpus ", request,
                                                     ": a count must be 1 or more (one GPU alone needs no agent: "
                                                     "--device cuda:K without --gpus)"));
    }
  } else {
    for (absl::string_view piece : absl::StrSplit(request, ',')) {
      int ordinal = 0;
      if (!absl::SimpleAtoi(piece, &ordinal) || ordinal < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--gpus ", request, ": \"", piece, "\" is not a GPU ordinal; expected all, N or a list such as 0,2,5"));
      }
      if (!out.empty() && ordinal <= out.back()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--gpus ", request, ": list the ordinals in ascending order, each once"));
      }
      out.push_back(ordinal);
    }
    if (visible == 0 || out.back() >= visible) return NoSuchGpu(request, visible, built_with_cuda);
    return out;
  }
  if (visible == 0 || count > visible) return NoSuchGpu(request, visible, built_with_cuda);
  for (int i = 0; i < count; ++i) out.push_back(i);
  return out;
}

absl::StatusOr<std::string> OffsetListenPort(const std::string& flag, const std::string& address, int offset) {
  if (address.empty()) return address;
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > kMaxPort) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " \"", address, "\": expected host:port"));
  }
  if (port == 0) return address;
  if (port + offset > kMaxPort) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " \"", address, "\": worker ", offset,
                                                   " would listen on port ", port + offset, ", beyond ", kMaxPort));
  }
  return absl::StrCat(address.substr(0, colon + 1), port + offset);
}

std::string SuffixedPath(const std::string& path, const std::string& suffix) {
  const std::filesystem::path p(path);
  return (p.parent_path() / absl::StrCat(p.stem().string(), "-", suffix, p.extension().string())).string();
}

absl::StatusOr<std::vector<NodeWorker>> PlanNodeWorkers(const NodeLayout& layout) {
  const bool gpu = !layout.gpus.empty();
  const int n = gpu ? static_cast<int>(layout.gpus.size()) : layout.cpu_workers;
  if (n < 1) return absl::InvalidArgumentError("--workers: expected 1 or more");
  std::vector<NodeWorker> out;
  for (int i = 0; i < n; ++i) {
    // K names the worker and offsets its ports: the GPU's ordinal, so that a GPU's worker is
    // found at the same ports whichever GPUs are selected.
    const int k = gpu ? layout.gpus[i] : i;
    const std::string slot = absl::StrCat(gpu ? "gpu" : "cpu", k);
    NodeWorker w;
    w.name = absl::StrCat(layout.name, "-", slot);
    absl::StatusOr<std::string> metrics = OffsetListenPort("--metrics_listen", layout.metrics_listen, k);
    if (!metrics.ok()) return metrics.status();
    absl::StatusOr<std::string> health = OffsetListenPort("--health_listen", layout.health_listen, k);
    if (!health.ok()) return health.status();
    w.argv = {layout.binary, "--name=" + w.name, gpu ? absl::StrCat("--device=cuda:", k) : "--device=cpu",
              "--metrics_listen=" + *metrics, "--health_listen=" + *health};
    if (!layout.endpoints_file.empty())
      w.argv.push_back("--endpoints_file=" + SuffixedPath(layout.endpoints_file, slot));
    if (const std::vector<int> share = CpuShare(layout.cpus, n, i); !share.empty()) {
      w.argv.push_back("--cpus=" + FormatCpuList(share));
    }
    w.argv.insert(w.argv.end(), layout.forwarded.begin(), layout.forwarded.end());
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace gradsync::worker
